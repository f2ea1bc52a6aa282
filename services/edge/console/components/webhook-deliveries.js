// A table of webhook deliveries with each attempt (time, answer or error, duration): the
// account holder's Webhooks page (with Redeliver) and the operator's account page (read only).
import { html } from "../lib/html.js";
import { dateTime, relative } from "../lib/format.js";
import { Badge, Empty } from "./ui.js";

const STATUS_KIND = { succeeded: "success", pending: "warning", failed: "danger" };

function AttemptList({ attempts }) {
  if (attempts.length === 0) return html`<span class="muted small">not sent yet</span>`;
  return html`<ol class="attempts small">
    ${attempts.map(
      (attempt) => html`<li title=${attempt.at}>
        ${dateTime(attempt.at)} · ${attempt.statusCode === null ? html`<span class="muted">no answer</span>` : html`<code>${attempt.statusCode}</code>`}
        ${attempt.statusCode === null && attempt.error && html` · <span class="muted">${attempt.error}</span>`} · ${attempt.durationMs} ms
      </li>`,
    )}
  </ol>`;
}

/**
 * @param {{ deliveries: any[], onRedeliver?: ((delivery: any) => void) | null }} props
 */
export function WebhookDeliveries({ deliveries, onRedeliver = null }) {
  if (deliveries.length === 0) return html`<${Empty} title="No deliveries yet">A delivery is made when a request of this account finishes.<//>`;
  return html`<div class="table-wrap">
    <table class="table" data-testid="webhook-deliveries">
      <thead><tr><th>Made</th><th>Event</th><th>Request</th><th>Status</th><th>Attempts</th>${onRedeliver && html`<th></th>`}</tr></thead>
      <tbody>
        ${deliveries.map(
          (delivery) => html`<tr key=${delivery.id} data-delivery-id=${delivery.id}>
            <td class="nowrap" title=${delivery.createdAt}>${relative(delivery.createdAt)}</td>
            <td class="small"><code>${delivery.type}</code></td>
            <td class="small"><code>${delivery.requestId}</code><div class="muted">webhook-id <code>${delivery.id}</code></div></td>
            <td>
              <${Badge} kind=${STATUS_KIND[delivery.status] ?? "neutral"}>${delivery.status}<//>
              ${delivery.nextAttemptAt && html`<div class="muted small" title=${delivery.nextAttemptAt}>next ${dateTime(delivery.nextAttemptAt)}</div>`}
            </td>
            <td><${AttemptList} attempts=${delivery.attempts} /></td>
            ${onRedeliver && html`<td class="actions"><button type="button" class="button small" onClick=${() => onRedeliver(delivery)}>Redeliver</button></td>`}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
