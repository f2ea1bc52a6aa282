// Admin › Overview: requests, spend and money paid in across every account, per day, with the
// accounts and models that spent most and the share of requests that ended without a charge.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get } from "../lib/api.js";
import { percent, plural, textMicros, usd } from "../lib/format.js";
import { Card, Empty, ErrorAlert, Loading, useLoad } from "../components/ui.js";
import { RequestsChart, SpendChart } from "../components/spend-chart.js";

const WINDOWS = [7, 30, 90];

function Stat({ label, value, hint }) {
  return html`<div class="stat">
    <div class="stat-label">${label}</div>
    <div class="stat-value" data-testid=${"overview-" + label.toLowerCase().replace(/ /g, "-")}>${value}</div>
    <div class="stat-hint muted small">${hint}</div>
  </div>`;
}

function RankTable({ rows, label, link }) {
  if (rows.length === 0) return html`<${Empty} title="Nothing in this window" />`;
  return html`<div class="table-wrap"><table class="table stacked">
    <thead><tr><th>${label}</th><th class="num">Requests</th><th class="num">Not charged</th><th class="num">Spend</th></tr></thead>
    <tbody>
      ${rows.map(
        (row) => html`<tr>
          <td class="ellipsis">${link ? html`<a href=${link(row)}>${row.email || row.id}</a>` : html`<code>${row.id}</code>`}</td>
          <td class="num" data-label="Requests">${row.requests}</td>
          <td class="num" data-label="Not charged">${row.notCharged}</td>
          <td class="num" data-label="Spend">${usd(row.spendUsd)}</td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

/** The chart components read money as micros beside the USD text. */
const moneyDays = (days, field) => days.map((day) => ({ date: day.date, usd: day[field], micros: Number(textMicros(day[field])), requests: day.charged }));

export function OverviewSection() {
  const [days, setDays] = useState(30);
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").OverviewAnswer>} */
  const { data, error } = useLoad(() => get(`/admin/overview?days=${days}&top=10`), [days]);
  const picker = html`<label class="muted small page-size">
    Window
    <select name="days" value=${days} onChange=${(event) => setDays(Number(event.target.value))}>
      ${WINDOWS.map((value) => html`<option value=${value}>last ${value} days</option>`)}
    </select>
  </label>`;
  if (error) return html`<${ErrorAlert} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  const { totals } = data;
  return html`<div class="toolbar">${picker}</div>
    <div class="stats stats-4">
      <${Stat} label="Requests" value=${totals.requests} hint=${`${totals.charged} charged · ${totals.pending} running`} />
      <${Stat} label="Error rate" value=${totals.errorRate === null ? "—" : percent(totals.errorRate)} hint=${`${plural(totals.notCharged, "request")} failed or expired, not charged`} />
      <${Stat} label="Spend" value=${usd(totals.spend.usd)} hint="Charges captured from balances" />
      <${Stat} label="Top-ups" value=${usd(totals.topUps.usd)} hint="Money paid in (revenue)" />
    </div>
    <${Card} title="Requests per day" subtitle="Every request that reserved funds, whatever its outcome (UTC days)">
      <${RequestsChart} days=${data.days} />
    <//>
    <div class="two-columns">
      <${Card} title="Spend per day"><${SpendChart} days=${moneyDays(data.days, "spendUsd")} /><//>
      <${Card} title="Top-ups per day"><${SpendChart} days=${moneyDays(data.days, "topUpUsd")} what="Top-ups" titleOf=${(day) => `${day.date}: ${usd(day.usd)} paid in`} /><//>
    </div>
    <div class="two-columns">
      <${Card} title="Top accounts" subtitle="By spend in the window">
        <${RankTable} rows=${data.topAccounts} label="Account" link=${(row) => "/console/admin/accounts/" + encodeURIComponent(row.id)} />
      <//>
      <${Card} title="Top models" subtitle="By spend in the window">
        <${RankTable} rows=${data.topModels} label="Model" />
      <//>
    </div>`;
}
