// Dashboard: what is left to spend, what was spent lately, and the latest requests.
import { html } from "../lib/html.js";
import { get } from "../lib/api.js";
import { microsText, plural, usd } from "../lib/format.js";
import { Card, Empty, ErrorAlert, Loading, PageHeader, useLoad } from "../components/ui.js";
import { SpendChart } from "../components/spend-chart.js";
import { RequestsTable } from "../components/requests-table.js";

function Stat({ label, value, hint, accent }) {
  return html`<div class=${"stat" + (accent ? " stat-accent" : "")}>
    <div class="stat-label">${label}</div>
    <div class="stat-value" data-testid=${"stat-" + label.toLowerCase()}>${value}</div>
    <div class="stat-hint muted small">${hint}</div>
  </div>`;
}

function BalanceCards() {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").BalanceAnswer>} */
  const { data, error } = useLoad(() => get("/balance"));
  if (error) return html`<${ErrorAlert} error=${error} />`;
  if (!data) return html`<div class="stats"><${Loading} /></div>`;
  return html`<div class="stats">
    <${Stat} label="Available" value=${usd(data.availableUsd)} hint="What new requests can spend" accent />
    <${Stat} label="Balance" value=${usd(data.balanceUsd)} hint="Prepaid funds on the account" />
    <${Stat} label="Held" value=${usd(data.heldUsd)} hint="Reserved by requests still running" />
  </div>`;
}

function SpendCard() {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").SpendAnswer>} */
  const { data, error } = useLoad(() => get("/spend?days=30"));
  const total = data ? data.days.reduce((sum, day) => sum + BigInt(day.micros), 0n) : 0n;
  // Only charged requests count as such; failed and expired ones are counted apart (never charged).
  const requests = data ? data.days.reduce((sum, day) => sum + day.requests, 0) : 0;
  const notCharged = data ? data.days.reduce((sum, day) => sum + day.notCharged, 0) : 0;
  return html`<${Card}
    title="Spend, last 30 days"
    subtitle=${data ? `${usd(microsText(total))} across ${plural(requests, "charged request")}${notCharged ? ` · ${notCharged} not charged (failed)` : ""}` : " "}
  >
    <${ErrorAlert} error=${error} />
    ${data ? html`<${SpendChart} days=${data.days} />` : !error && html`<${Loading} />`}
  <//>`;
}

function RecentCard() {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").UsagePage>} */
  const { data, error } = useLoad(() => get("/usage?limit=10"));
  return html`<${Card} title="Recent requests" actions=${html`<a class="button small" href="/console/usage">All usage →</a>`}>
    <${ErrorAlert} error=${error} />
    ${!data && !error && html`<${Loading} />`}
    ${data && data.requests.length === 0 && html`<${Empty} title="No requests yet">Create a key under <a href="/console/tokens">Tokens</a> or try the <a href="/console/playground">Playground</a>.<//>`}
    ${data && data.requests.length > 0 && html`<${RequestsTable} requests=${data.requests} compact />`}
  <//>`;
}

export function Dashboard({ account }) {
  return html`<${PageHeader} title="Dashboard" subtitle=${"Welcome back, " + account.email} />
    <${BalanceCards} />
    <${SpendCard} />
    <${RecentCard} />`;
}
