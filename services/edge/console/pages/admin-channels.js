// Admin › Channels: each model's channels with their circuit breaker, slots in use, and over a
// recent window the jobs that succeeded or failed on them and how long they took.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get, post } from "../lib/api.js";
import { dateTime, duration, percent } from "../lib/format.js";
import { Badge, Card, ErrorAlert, Loading, useLoad } from "../components/ui.js";
import { useAction } from "../components/account-actions.js";

const WINDOWS = [
  { hours: 1, label: "last hour" },
  { hours: 24, label: "last 24 hours" },
  { hours: 168, label: "last 7 days" },
];
const STATE_KIND = { closed: "success", "half-open": "warning", open: "danger" };

/** Closes the channel's breaker for every replica (POST /admin/channels/reset); shown while it is not closed. */
function ResetButton({ row, onDone }) {
  const action = useAction();
  if (row.state === "closed") return null;
  const reset = async () => {
    if (await action.run(() => post("/admin/channels/reset", { model: row.model, channel: row.channel }))) onDone();
  };
  return html`<button type="button" class="button small" data-testid="reset-breaker" disabled=${action.busy} onClick=${reset}>Reset</button>
    <${ErrorAlert} error=${action.error} />`;
}

/** The upstream's words at the channel's last failure, and when. */
function LastFailure({ failure }) {
  if (!failure) return html`<span class="muted">—</span>`;
  return html`<span class="small" data-testid="last-failure">${failure.detail}</span> <span class="muted small nowrap">${dateTime(failure.at)}</span>`;
}

export function ChannelsSection() {
  const [hours, setHours] = useState(24);
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").ChannelsAnswer>} */
  const { data, error, reload } = useLoad(() => get(`/admin/channels?hours=${hours}`), [hours]);
  return html`<div class="toolbar">
      <label class="muted small page-size">
        Window
        <select name="hours" value=${hours} onChange=${(event) => setHours(Number(event.target.value))}>
          ${WINDOWS.map((window) => html`<option value=${window.hours}>${window.label}</option>`)}
        </select>
      </label>
      <button type="button" class="button small" onClick=${reload}>Refresh</button>
    </div>
    <${Card} title="Channel health" subtitle="Breaker state, slots and the last failure are every replica's, from PostgreSQL (a sandbox channel's slots are the answering process's); job counts and latency are over the window. Reset closes an open breaker at once.">
      <${ErrorAlert} error=${error} />
      ${!data && !error && html`<${Loading} />`}
      ${data &&
      html`<div class="table-wrap"><table class="table" data-testid="channels-table">
        <thead><tr>
          <th>Model</th><th>Channel</th><th>Provider</th><th>Breaker</th><th class="num">In use</th>
          <th class="num">Succeeded</th><th class="num">Failed</th><th class="num">Success rate</th><th class="num">p50</th><th class="num">p95</th>
          <th>Last failure</th><th></th>
        </tr></thead>
        <tbody>
          ${data.channels.map(
            (row) => html`<tr data-channel=${row.model + "/" + row.channel}>
              <td><code>${row.model}</code></td>
              <td>${row.channel}</td>
              <td><code>${row.provider}</code></td>
              <td><${Badge} kind=${STATE_KIND[row.state] ?? "neutral"}>${row.state}<//></td>
              <td class="num nowrap">${row.inUse} / ${row.capacity}</td>
              <td class="num">${row.succeeded}</td>
              <td class="num">${row.failed}</td>
              <td class="num" data-testid="success-rate">${row.successRate === null ? "—" : percent(row.successRate)}</td>
              <td class="num nowrap">${duration(row.latencyMs.p50)}</td>
              <td class="num nowrap">${duration(row.latencyMs.p95)}</td>
              <td><${LastFailure} failure=${row.lastFailure} /></td>
              <td class="actions"><${ResetButton} row=${row} onDone=${reload} /></td>
            </tr>`,
          )}
        </tbody>
      </table></div>`}
    <//>`;
}
