// A table of generation requests (usage rows); rows can be clicked to open their detail.
import { html } from "../lib/html.js";
import { dateTime, usd } from "../lib/format.js";
import { Badge } from "./ui.js";

const STATUS = {
  charged: { kind: "success", label: "charged" },
  not_charged: { kind: "neutral", label: "not charged" },
  pending: { kind: "warning", label: "pending" },
};

export function StatusBadge({ status }) {
  const shown = STATUS[status] ?? { kind: "neutral", label: status };
  return html`<${Badge} kind=${shown.kind}>${shown.label}<//>`;
}

export function keyLabel(row) {
  if (row.keyId === "console") return "Playground";
  return row.keyName || row.keyId || "—";
}

/**
 * On a phone (app.css, "requests" tables) each row becomes two lines, model and cost over time and
 * status, so what a request cost and how it ended are never scrolled out of view; the other
 * columns are in the request's detail.
 */
export function RequestsTable({ requests, onSelect, selectedId, compact = false }) {
  return html`<div class="table-wrap">
    <table class=${"table requests" + (onSelect ? " clickable" : "")}>
      <thead>
        <tr>
          <th>Time</th>
          <th>Model</th>
          ${!compact && html`<th class="col-size">Size</th>`}
          <th class="col-tier">Tier</th>
          <th>Status</th>
          <th class="num">Cost</th>
          <th class="col-key">Key</th>
          ${!compact && html`<th class="col-user">User</th>`}
          ${!compact && html`<th class="col-id">Request id</th>`}
        </tr>
      </thead>
      <tbody>
        ${requests.map(
          (row) => html`<tr
            key=${row.requestId}
            data-request-id=${row.requestId}
            class=${row.requestId === selectedId ? "selected" : ""}
            tabindex=${onSelect ? 0 : undefined}
            onClick=${onSelect && (() => onSelect(row))}
            onKeyDown=${onSelect && ((event) => event.key === "Enter" && onSelect(row))}
          >
            <td class="nowrap col-time" title=${row.createdAt}>${dateTime(row.createdAt)}</td>
            <td class="col-model"><code>${row.model}</code></td>
            ${!compact && html`<td class="nowrap col-size">${row.size}${row.imagesRequested > 1 ? ` ×${row.imagesRequested}` : ""}</td>`}
            <td class="col-tier">${row.tier}</td>
            <td class="col-status"><${StatusBadge} status=${row.status} /></td>
            <td class="num col-cost">${row.status === "pending" ? "…" : usd(row.amountUsd)}</td>
            <td class="ellipsis col-key">${keyLabel(row)}</td>
            ${!compact && html`<td class="ellipsis col-user" title=${row.user ?? ""}>${row.user ?? "—"}</td>`}
            ${!compact && html`<td class="col-id"><code class="muted small">${row.requestId}</code></td>`}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
