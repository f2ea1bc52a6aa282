// Webhooks: endpoints that receive this account's job outcomes, signed with the Standard Webhooks
// scheme (secret shown once, rotatable), and every delivery with its attempts and a Redeliver button.
import { useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { del, get, post } from "../lib/api.js";
import { shortDate } from "../lib/format.js";
import { Card, ConfirmDialog, Empty, ErrorAlert, Field, Loading, PageHeader, useLoad } from "../components/ui.js";
import { WebhookDeliveries } from "../components/webhook-deliveries.js";

const EVENT_TYPES = ["image.generation.succeeded", "image.generation.failed"];

function CreateEndpointForm({ onCreated }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState(EVENT_TYPES);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null));
  const toggle = (type) => setEvents(events.includes(type) ? events.filter((other) => other !== type) : [...events, type]);

  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onCreated(await post("/webhooks", { url: url.trim(), events }));
      setUrl("");
      setEvents(EVENT_TYPES);
    } catch (failure) {
      setError(failure);
    }
    setBusy(false);
  };

  return html`<${Card} title="Add an endpoint" subtitle="Orvado POSTs each finished request's outcome to it, signed (see the API docs, Webhooks).">
    <form class="form" onSubmit=${submit}>
      <${ErrorAlert} error=${error} />
      <${Field} label="URL" hint="https or http, reachable from the internet; no user or password in it">
        <input name="url" type="url" required maxLength="2048" placeholder="https://example.com/hooks/orvado" value=${url} onInput=${(event) => setUrl(event.target.value)} />
      <//>
      <fieldset class="field checks">
        <legend class="field-label">Events</legend>
        <div class="check-grid">
          ${EVENT_TYPES.map(
            (type) => html`<label class="check">
              <input type="checkbox" name="events" value=${type} checked=${events.includes(type)} onChange=${() => toggle(type)} />
              <span><code>${type}</code></span>
            </label>`,
          )}
        </div>
      </fieldset>
      <div class="form-actions">
        <button type="submit" class="button primary" disabled=${busy || events.length === 0}>${busy ? "Adding…" : "Add endpoint"}</button>
      </div>
    </form>
  <//>`;
}

/** The signing secret, shown once: Orvado keeps it to sign with, but never shows it again. */
function SigningSecret({ url, secret, onDone }) {
  /** @type {import("../vendor/preact.mjs").RefObject<HTMLInputElement>} */
  const input = useRef(null);
  return html`<section class="card reveal" aria-live="polite">
    <div class="card-header">
      <div>
        <h2>Signing secret for ${url}</h2>
        <p class="reveal-warning"><strong>Copy this secret now. It is not shown again</strong> (rotate it to get a new one). Verify each delivery with it.</p>
      </div>
    </div>
    <div class="secret-row">
      <input class="secret" data-testid="webhook-secret" readonly value=${secret} ref=${input} onFocus=${(event) => event.target.select()} aria-label="Webhook signing secret" />
      <button type="button" class="button primary" onClick=${() => navigator.clipboard?.writeText(secret).catch(() => input.current?.select())}>Copy</button>
      <button type="button" class="button" onClick=${onDone}>Done</button>
    </div>
  </section>`;
}

function EndpointsTable({ endpoints, onRotate, onDelete }) {
  return html`<div class="table-wrap">
    <table class="table" data-testid="webhook-endpoints">
      <thead><tr><th>URL</th><th>Events</th><th>Added</th><th></th></tr></thead>
      <tbody>
        ${endpoints.map(
          (endpoint) => html`<tr key=${endpoint.id} data-endpoint-id=${endpoint.id}>
            <td class="strong"><code>${endpoint.url}</code></td>
            <td class="small">${endpoint.events.map((type) => html`<div><code>${type}</code></div>`)}</td>
            <td class="nowrap" title=${endpoint.createdAt}>${shortDate(endpoint.createdAt)}</td>
            <td class="actions">
              <button type="button" class="button small" onClick=${() => onRotate(endpoint)}>Rotate secret</button>
              <button type="button" class="button small danger-outline" onClick=${() => onDelete(endpoint)}>Delete</button>
            </td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export function Webhooks() {
  /** @type {import("../lib/answers.js").Loaded<any>} */
  const endpoints = useLoad(() => get("/webhooks"));
  /** @type {import("../lib/answers.js").Loaded<any>} */
  const deliveries = useLoad(() => get("/webhooks/deliveries"));
  const [revealed, setRevealed] = useState(/** @type {{ url: string, secret: string } | null} */ (null));
  const [deleting, setDeleting] = useState(/** @type {any} */ (null));
  const [error, setError] = useState(/** @type {any} */ (null));

  const act = async (run) => {
    setError(null);
    try {
      await run();
    } catch (failure) {
      setError(failure);
    }
  };
  const rotate = (endpoint) =>
    act(async () => {
      const answer = await post(`/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`);
      setRevealed({ url: answer.endpoint.url, secret: answer.secret });
    });
  const redeliver = (delivery) =>
    act(async () => {
      await post(`/webhooks/deliveries/${encodeURIComponent(delivery.id)}/redeliver`);
      deliveries.reload();
    });

  return html`<${PageHeader} title="Webhooks" subtitle="Get each request's outcome pushed to your server instead of waiting or polling." />
    ${revealed && html`<${SigningSecret} url=${revealed.url} secret=${revealed.secret} onDone=${() => setRevealed(null)} />`}
    <${CreateEndpointForm}
      onCreated=${(answer) => {
        setRevealed({ url: answer.endpoint.url, secret: answer.secret });
        endpoints.reload();
      }}
    />
    <${ErrorAlert} error=${error} />
    <${Card} title="Endpoints">
      <${ErrorAlert} error=${endpoints.error} />
      ${!endpoints.data && !endpoints.error && html`<${Loading} />`}
      ${endpoints.data && endpoints.data.endpoints.length === 0 && html`<${Empty} title="No endpoints yet">Add one above.<//>`}
      ${endpoints.data && endpoints.data.endpoints.length > 0 && html`<${EndpointsTable} endpoints=${endpoints.data.endpoints} onRotate=${rotate} onDelete=${setDeleting} />`}
    <//>
    <${Card} title="Deliveries" subtitle="The latest 50, newest first. A failed attempt is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h." actions=${html`<button type="button" class="button small" onClick=${() => deliveries.reload()}>Refresh</button>`}>
      <${ErrorAlert} error=${deliveries.error} />
      ${!deliveries.data && !deliveries.error && html`<${Loading} />`}
      ${deliveries.data && html`<${WebhookDeliveries} deliveries=${deliveries.data.deliveries} onRedeliver=${redeliver} />`}
    <//>
    ${deleting &&
    html`<${ConfirmDialog}
      title="Delete this endpoint?"
      confirmLabel="Delete endpoint"
      onConfirm=${async () => {
        await del(`/webhooks/${encodeURIComponent(deleting.id)}`);
        endpoints.reload();
        deliveries.reload();
      }}
      onClose=${() => setDeleting(null)}
    >
      <p><code>${deleting.url}</code> stops receiving deliveries, and its delivery history is deleted.</p>
    <//>`}`;
}
