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

export function RequestsTable({ requests, onSelect, selectedId, compact = false }) {
  return html`<div class="table-wrap">
    <table class=${"table" + (onSelect ? " clickable" : "")}>
      <thead>
        <tr>
          <th>Time</th>
          <th>Model</th>
          ${!compact && html`<th>Size</th>`}
          <th>Tier</th>
          <th>Status</th>
          <th class="num">Cost</th>
          <th>Key</th>
          ${!compact && html`<th>User</th>`}
          ${!compact && html`<th>Request id</th>`}
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
            <td class="nowrap" title=${row.createdAt}>${dateTime(row.createdAt)}</td>
            <td><code>${row.model}</code></td>
            ${!compact && html`<td class="nowrap">${row.size}${row.imagesRequested > 1 ? ` ×${row.imagesRequested}` : ""}</td>`}
            <td>${row.tier}</td>
            <td><${StatusBadge} status=${row.status} /></td>
            <td class="num">${row.status === "pending" ? "…" : usd(row.amountUsd)}</td>
            <td class="ellipsis">${keyLabel(row)}</td>
            ${!compact && html`<td class="ellipsis" title=${row.user ?? ""}>${row.user ?? "—"}</td>`}
            ${!compact && html`<td><code class="muted small">${row.requestId}</code></td>`}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
