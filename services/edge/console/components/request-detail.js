// One request in full: its cost record beside its job (channel, how long it ran, how it failed)
// and its images while their links live. `apiPath` is where to read it: /usage/<id> for one's own
// requests, /admin/accounts/<account>/usage/<id> for an admin looking at an account.
import { html } from "../lib/html.js";
import { get } from "../lib/api.js";
import { bytes, dateTime, duration, usd } from "../lib/format.js";
import { Card, DetailList, ErrorAlert, Loading, useLoad } from "./ui.js";
import { StatusBadge, keyLabel } from "./requests-table.js";

function jobRows(job) {
  if (!job) return [["Job", html`<span class="muted">No job record (refused before it ran)</span>`]];
  return [
    ["Latency", job.latencyMs === null ? "still running" : duration(job.latencyMs)],
    ["Channel", job.channel],
    ...(job.quality ? [["Quality", job.quality]] : []),
    ["Started", dateTime(job.startedAt)],
    ["Finished", job.finishedAt ? dateTime(job.finishedAt) : "not yet"],
    ...(job.imageBytes > 0 ? [["Stored", bytes(job.imageBytes)]] : []),
    ...(job.error ? [["Error", html`<code>${job.error.code}</code> <span data-testid="request-error">${job.error.message}</span>`]] : []),
    // The operator's view only: what the upstream said (the client's answer never carries it).
    ...(job.failureDetail ? [["Upstream cause", html`<span class="small" data-testid="failure-detail">${job.failureDetail}</span>`]] : []),
  ];
}

function Images({ job }) {
  if (!job) return null;
  if (job.images.length === 0) return job.imagesNote && !job.error ? html`<p class="muted small">${job.imagesNote}</p>` : null;
  return html`<div class="image-grid detail-images">
    ${job.images.map(
      (image, index) => html`<figure class="image-tile">
        <a href=${image.url} target="_blank" rel="noopener"><img src=${image.url} alt=${`Image ${index + 1} of the request`} /></a>
        <figcaption class="muted small">${image.width} × ${image.height} · temporary link</figcaption>
      </figure>`,
    )}
  </div>`;
}

export function RequestDetail({ requestId, apiPath, onClose }) {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").RequestDetailAnswer>} */
  const { data, error } = useLoad(() => get(apiPath), [apiPath]);
  return html`<${Card}
    class="detail-panel"
    data-testid="request-detail"
    title="Request"
    subtitle=${requestId}
    actions=${html`<button type="button" class="button small" onClick=${onClose} aria-label="Close detail">Close</button>`}
  >
    <${ErrorAlert} error=${error} />
    ${!data && !error && html`<${Loading} />`}
    ${data &&
    html`<div class="detail-amount">
        <span class="stat-value">${data.status === "pending" ? "pending" : usd(data.amountUsd)}</span>
        <${StatusBadge} status=${data.status} />
      </div>
      <${DetailList}
        rows=${[
          ["Request id", html`<code>${data.requestId}</code>`],
          ["Model", html`<code>${data.model}</code>`],
          ["Size", data.size],
          ["Tier", data.tier],
          ["Images", `${data.imagesDelivered} delivered of ${data.imagesRequested} requested`],
          ["Amount", html`${usd(data.amountUsd)} <span class="muted small">(${data.amountMicros} micro-USD)</span>`],
          ["Key", keyLabel(data)],
          ["User", data.user ?? "—"],
          ["Created", dateTime(data.createdAt)],
          ["Settled", data.settledAt ? dateTime(data.settledAt) : "not yet"],
          ...jobRows(data.job),
        ]}
      />
      <${Images} job=${data.job} />
      <p class="muted small">Also at <code>GET /api/cost/request/${data.requestId}</code>.</p>`}
  <//>`;
}
