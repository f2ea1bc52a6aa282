// The new key's secret, shown exactly once, with a copy button.
import { useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";

async function copyText(text, input) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Clipboard API refused (permissions, insecure origin): fall back to selecting the text.
    input.select();
    return document.execCommand?.("copy") ?? false;
  }
}

export function SecretReveal({ name, secret, onDone }) {
  /** @type {import("../vendor/preact.mjs").RefObject<HTMLInputElement>} */
  const input = useRef(null);
  const [copied, setCopied] = useState(/** @type {boolean | null} */ (null));
  const copy = async () => setCopied(await copyText(secret, input.current));
  return html`<section class="card reveal" aria-live="polite">
    <div class="card-header">
      <div>
        <h2>Key “${name}” created</h2>
        <p class="reveal-warning"><strong>Copy this secret now. You will not see it again:</strong> Orvado keeps only a hash of it.</p>
      </div>
    </div>
    <div class="secret-row">
      <input class="secret" data-testid="new-secret" readonly value=${secret} ref=${input} onFocus=${(event) => event.target.select()} aria-label="New API key secret" />
      <button type="button" class="button primary" onClick=${copy}>${copied ? "Copied" : "Copy"}</button>
    </div>
    ${copied === false && html`<p class="field-error">Copying was blocked by the browser: the secret is selected, press Ctrl+C.</p>`}
    <p class="muted small">Use it as <code>Authorization: Bearer …</code>, or as <code>apiKey</code> in an OpenAI SDK with <code>baseURL</code> set to <code>${location.origin}/v1</code>.</p>
    <div class="form-actions"><button type="button" class="button" onClick=${onDone}>I have saved it</button></div>
  </section>`;
}
