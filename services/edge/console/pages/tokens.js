// Tokens: create API keys (secret shown once), see what each has spent, revoke them.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { del, get, post } from "../lib/api.js";
import { relative, shortDate, usd } from "../lib/format.js";
import { Badge, Card, ConfirmDialog, Empty, ErrorAlert, Field, Loading, PageHeader, useLoad } from "../components/ui.js";
import { SecretReveal } from "../components/secret-reveal.js";

const MONEY = /^\d{1,12}(\.\d{1,6})?$/;

export function keyStatus(key, now = Date.now()) {
  if (key.revokedAt) return "revoked";
  if (key.expiresAt && new Date(key.expiresAt).getTime() <= now) return "expired";
  return "active";
}

const STATUS_KIND = { active: "success", revoked: "danger", expired: "warning" };

/** A local calendar day as the date input wants it (YYYY-MM-DD). */
function todayPlus(days) {
  const date = new Date();
  date.setDate(date.getDate() + days);
  const pad = (number) => String(number).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

function ModelChoice({ models, chosen, onChange }) {
  const toggle = (id) => onChange(chosen.includes(id) ? chosen.filter((other) => other !== id) : [...chosen, id]);
  return html`<fieldset class="field checks">
    <legend class="field-label">Models this key may use</legend>
    <div class="check-grid">
      ${models.map(
        (model) => html`<label class="check">
          <input type="checkbox" name="models" value=${model.id} checked=${chosen.includes(model.id)} onChange=${() => toggle(model.id)} />
          <span><code>${model.id}</code></span>
        </label>`,
      )}
    </div>
    <span class="field-hint">${chosen.length === 0 ? "None ticked: the key may use every model." : `Only the ${chosen.length} ticked model${chosen.length === 1 ? "" : "s"}.`}</span>
  </fieldset>`;
}

function CreateKeyForm({ onCreated }) {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").ModelsAnswer>} */
  const models = useLoad(() => get("/models"));
  const [name, setName] = useState("");
  const [limit, setLimit] = useState("");
  const [expiry, setExpiry] = useState("");
  const [chosen, setChosen] = useState([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null)); // what was thrown: an ApiError, or any Error
  const limitError = limit && !MONEY.test(limit.trim()) ? "A dollar amount such as 5 or 12.50" : null;

  const submit = async (event) => {
    event.preventDefault();
    if (limitError) return;
    setBusy(true);
    setError(null);
    const body = { name: name.trim() };
    if (limit.trim()) body.limitUsd = limit.trim();
    // The key works through the whole chosen day (local time).
    if (expiry) body.expiresAt = new Date(`${expiry}T23:59:59.999`).toISOString();
    if (chosen.length > 0) body.models = chosen;
    try {
      const created = await post("/keys", body);
      setName("");
      setLimit("");
      setExpiry("");
      setChosen([]);
      onCreated(created);
    } catch (failure) {
      setError(failure);
    }
    setBusy(false);
  };

  return html`<${Card} title="Create a key" subtitle="Keys authenticate calls to /v1/images/generations. Give each app its own.">
    <form class="form" onSubmit=${submit}>
      <${ErrorAlert} error=${error} />
      <div class="form-grid">
        <${Field} label="Name" hint="For you: where the key is used. Empty: “default”, as the CLI names it">
          <input name="name" maxLength="100" placeholder="default" value=${name} onInput=${(event) => setName(event.target.value)} />
        <//>
        <${Field} label="Spending limit (USD)" hint="Optional; empty means no limit beyond the balance" error=${limitError}>
          <input name="limitUsd" inputMode="decimal" placeholder="No limit" value=${limit} onInput=${(event) => setLimit(event.target.value)} />
        <//>
        <${Field} label="Expires on" hint="Optional; the key works through that day">
          <input type="date" name="expiresAt" min=${todayPlus(1)} value=${expiry} onInput=${(event) => setExpiry(event.target.value)} />
        <//>
      </div>
      ${models.data && html`<${ModelChoice} models=${models.data.models} chosen=${chosen} onChange=${setChosen} />`}
      <${ErrorAlert} error=${models.error} />
      <div class="form-actions">
        <button type="submit" class="button primary" disabled=${busy || !!limitError}>${busy ? "Creating…" : "Create key"}</button>
      </div>
    </form>
  <//>`;
}

function SpentCell({ entry }) {
  if (!entry.limitUsd) return html`<span>${usd(entry.spentUsd)}</span> <span class="muted small">no limit</span>`;
  const share = Math.min(1, Number(entry.spentUsd) / Math.max(Number(entry.limitUsd), 1e-9));
  return html`<div class="meter-cell">
    <span>${usd(entry.spentUsd)} <span class="muted">of ${usd(entry.limitUsd)}</span></span>
    <svg class=${"meter" + (share >= 0.9 ? " meter-high" : "")} viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true">
      <rect class="meter-track" width="100" height="6" rx="3" />
      <rect class="meter-fill" width=${Math.max(share * 100, share > 0 ? 3 : 0)} height="6" rx="3" />
    </svg>
  </div>`;
}

function KeysTable({ keys, onRevoke }) {
  // On a phone each key is a block of labelled lines (app.css, "stacked"), its Revoke button in view.
  return html`<div class="table-wrap">
    <table class="table stacked">
      <thead>
        <tr><th>Name</th><th>Key</th><th>Created</th><th>Last used</th><th>Expires</th><th>Spent</th><th>Models</th><th>Status</th><th></th></tr>
      </thead>
      <tbody>
        ${keys.map((entry) => {
          const status = keyStatus(entry);
          return html`<tr key=${entry.id} data-key-id=${entry.id} data-key-name=${entry.name} class=${status === "active" ? "" : "inactive"}>
            <td class="strong">${entry.name}</td>
            <td class="nowrap" data-label="Key"><code>${entry.prefix}…</code></td>
            <td class="nowrap" data-label="Created" title=${entry.createdAt}>${shortDate(entry.createdAt)}</td>
            <td class="nowrap" data-label="Last used" title=${entry.lastUsedAt ?? ""}>${relative(entry.lastUsedAt)}</td>
            <td class="nowrap" data-label="Expires" title=${entry.expiresAt ?? ""}>${entry.expiresAt ? shortDate(entry.expiresAt) : "never"}</td>
            <td data-label="Spent"><${SpentCell} entry=${entry} /></td>
            <td class="small" data-label="Models">${entry.models?.length ? entry.models.join(", ") : html`<span class="muted">all</span>`}</td>
            <td data-label="Status"><${Badge} kind=${STATUS_KIND[status]}>${status}<//></td>
            <td class="actions">
              ${status === "active" && html`<button type="button" class="button small danger-outline" onClick=${() => onRevoke(entry)}>Revoke</button>`}
            </td>
          </tr>`;
        })}
      </tbody>
    </table>
  </div>`;
}

export function Tokens() {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").KeysAnswer>} */
  const keys = useLoad(() => get("/keys"));
  const [revealed, setRevealed] = useState(/** @type {{ name: string, secret: string } | null} */ (null));
  const [revoking, setRevoking] = useState(/** @type {import("../lib/answers.js").KeyJson | null} */ (null));

  const created = (answer) => {
    setRevealed({ name: answer.key.name, secret: answer.secret });
    keys.reload();
  };

  return html`<${PageHeader} title="Tokens" subtitle="API keys for your apps. Each starts with td- and is shown once, when you create it." />
    ${revealed && html`<${SecretReveal} name=${revealed.name} secret=${revealed.secret} onDone=${() => setRevealed(null)} />`}
    <${CreateKeyForm} onCreated=${created} />
    <${Card} title="Your keys">
      <${ErrorAlert} error=${keys.error} />
      ${!keys.data && !keys.error && html`<${Loading} />`}
      ${keys.data && keys.data.keys.length === 0 && html`<${Empty} title="No keys yet">Create one above to call the API.<//>`}
      ${keys.data && keys.data.keys.length > 0 && html`<${KeysTable} keys=${keys.data.keys} onRevoke=${setRevoking} />`}
    <//>
    ${revoking &&
    html`<${ConfirmDialog}
      title="Revoke this key?"
      confirmLabel="Revoke key"
      onConfirm=${async () => {
        await del(`/keys/${encodeURIComponent(revoking.id)}`);
        keys.reload();
      }}
      onClose=${() => setRevoking(null)}
    >
      <p>Apps using <strong>${revoking.name}</strong> (<code>${revoking.prefix}…</code>) will be refused with 401 within a couple of seconds. This cannot be undone.</p>
    <//>`}`;
}
