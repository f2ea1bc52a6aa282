// Admin › an account: its balance, keys, ledger statement and usage, with the admin's actions on it
// (top-up, signed adjustment, limits, disable or enable).
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get, post } from "../lib/api.js";
import { dateTime, relative, shortDate, signedUsd, usd } from "../lib/format.js";
import { Badge, Card, ConfirmDialog, DetailList, Empty, ErrorAlert, Loading, useLoad } from "../components/ui.js";
import { AdjustDialog, LimitsDialog, TopUpDialog, limitsText } from "../components/account-actions.js";
import { RequestsTable } from "../components/requests-table.js";
import { RequestDetail } from "../components/request-detail.js";
import { WebhookDeliveries } from "../components/webhook-deliveries.js";

/** The account's webhook endpoints and latest deliveries with their attempts (read only: the account holder redelivers). */
function WebhooksCard({ accountId }) {
  /** @type {import("../lib/answers.js").Loaded<any>} */
  const hooks = useLoad(() => get(`/admin/accounts/${encodeURIComponent(accountId)}/webhooks`), [accountId]);
  return html`<${Card} title="Webhooks" subtitle="Endpoints and the latest 50 deliveries">
    <${ErrorAlert} error=${hooks.error} />
    ${!hooks.data && !hooks.error && html`<${Loading} />`}
    ${hooks.data &&
    html`${hooks.data.endpoints.length === 0
        ? html`<${Empty} title="No endpoints" />`
        : html`<ul class="small" data-testid="account-webhook-endpoints">
            ${hooks.data.endpoints.map((endpoint) => html`<li><code>${endpoint.url}</code> · ${endpoint.events.join(", ")} · added ${shortDate(endpoint.createdAt)}</li>`)}
          </ul>`}
      <${WebhookDeliveries} deliveries=${hooks.data.deliveries} />`}
  <//>`;
}

/**
 * Each kind's name and the sign of its amount from the account's side (the ledger keeps amounts
 * unsigned, an adjustment excepted): top-ups and releases are credits, holds and charges debits.
 * A hold and its release move money between available and held; the balance moves with top-ups,
 * charges and adjustments only (docs/console.md, "Operator pages").
 */
const KINDS = {
  top_up: { label: "top-up", sign: 1 },
  reserve: { label: "hold", sign: -1 },
  capture: { label: "charge", sign: -1 },
  release: { label: "release", sign: 1 },
  adjustment: { label: "adjustment", sign: 1 },
};

/** An entry's amount, signed; holds and releases (available, not balance) are shown muted. */
function EntryAmount({ entry }) {
  const kind = KINDS[entry.kind] ?? { label: entry.kind, sign: 1 };
  const text = signedUsd(entry.amountUsd, kind.sign);
  const onHold = entry.kind === "reserve" || entry.kind === "release";
  const direction = text.startsWith("−") ? "debit" : "credit";
  return html`<td class=${`num nowrap amount-${direction}${onHold ? " muted" : ""}`} data-testid="entry-amount">${text}</td>`;
}

function keyState(key) {
  if (key.revokedAt) return html`<${Badge} kind="danger">revoked<//>`;
  if (key.expiresAt && new Date(key.expiresAt).getTime() <= Date.now()) return html`<${Badge} kind="warning">expired<//>`;
  return html`<${Badge} kind="success">active<//>`;
}

function KeysCard({ keys }) {
  return html`<${Card} title="Keys" subtitle=${`${keys.length} key${keys.length === 1 ? "" : "s"}, revoked ones included`}>
    ${keys.length === 0
      ? html`<${Empty} title="No keys yet" />`
      : html`<div class="table-wrap"><table class="table stacked" data-testid="account-keys">
          <thead><tr><th>Name</th><th>Key</th><th>Status</th><th>Created</th><th>Last used</th><th class="num">Spent</th><th class="num">Limit</th></tr></thead>
          <tbody>
            ${keys.map(
              (key) => html`<tr>
                <td class="strong">${key.name}</td>
                <td data-label="Key"><code class="small">${key.prefix}…</code></td>
                <td data-label="Status">${keyState(key)}</td>
                <td class="nowrap" data-label="Created">${shortDate(key.createdAt)}</td>
                <td class="nowrap" data-label="Last used">${relative(key.lastUsedAt)}</td>
                <td class="num" data-label="Spent">${usd(key.spentUsd)}</td>
                <td class="num" data-label="Limit">${key.limitUsd === null ? "none" : usd(key.limitUsd)}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`}
  <//>`;
}

function StatementCard({ accountId, version }) {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").StatementAnswer>} */
  const { data, error } = useLoad(() => get(`/admin/accounts/${encodeURIComponent(accountId)}/statement?days=30`), [accountId, version]);
  const subtitle = data
    ? `Last ${data.days} days · opening ${usd(data.openingBalanceUsd)} · closing ${usd(data.closingBalanceUsd)} · credits +, debits −; holds and releases (grey) move money between available and held`
    : " ";
  return html`<${Card} title="Ledger statement" subtitle=${subtitle}>
    <${ErrorAlert} error=${error} />
    ${!data && !error && html`<${Loading} />`}
    ${data && data.entries.length === 0 && html`<${Empty} title="No ledger entries in this period" />`}
    ${data &&
    data.entries.length > 0 &&
    html`<div class="table-wrap"><table class="table" data-testid="account-statement">
      <thead><tr><th>When</th><th>Entry</th><th class="num">Amount</th><th class="num">Balance after</th><th class="num">Held after</th><th>Reference</th></tr></thead>
      <tbody>
        ${data.entries.map(
          (entry) => html`<tr>
            <td class="nowrap">${dateTime(entry.createdAt)}</td>
            <td>${KINDS[entry.kind]?.label ?? entry.kind}</td>
            <${EntryAmount} entry=${entry} />
            <td class="num nowrap">${usd(entry.balanceAfterUsd)}</td>
            <td class="num nowrap">${usd(entry.heldAfterUsd)}</td>
            <td class="ellipsis">${entry.reason || html`<code class="small muted">${entry.requestId}</code>`}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>`}
  <//>`;
}

function UsageCard({ accountId }) {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").UsagePage>} */
  const { data, error } = useLoad(() => get(`/admin/accounts/${encodeURIComponent(accountId)}/usage?limit=25`), [accountId]);
  const [selected, setSelected] = useState(null);
  return html`<div class=${selected ? "split" : ""}>
    <${Card} title="Usage" subtitle="The account's latest 25 requests; pick one for its detail">
      <${ErrorAlert} error=${error} />
      ${!data && !error && html`<${Loading} />`}
      ${data && data.requests.length === 0 && html`<${Empty} title="No requests yet" />`}
      ${data && data.requests.length > 0 && html`<${RequestsTable} requests=${data.requests} selectedId=${selected} compact=${selected !== null} onSelect=${(row) => setSelected(row.requestId)} />`}
    <//>
    ${selected &&
    html`<${RequestDetail}
      requestId=${selected}
      apiPath=${`/admin/accounts/${encodeURIComponent(accountId)}/usage/${encodeURIComponent(selected)}`}
      onClose=${() => setSelected(null)}
    />`}
  </div>`;
}

export function AccountSection({ accountId, self }) {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").AdminAccountDetail>} */
  const page = useLoad(() => get(`/admin/accounts/${encodeURIComponent(accountId)}`), [accountId]);
  const [dialog, setDialog] = useState(/** @type {"topup" | "adjust" | "limits" | "toggle" | null} */ (null));
  // Bumped after every change, so the statement reads the new entries.
  const [version, setVersion] = useState(0);
  const changed = () => {
    page.reload();
    setVersion(version + 1);
  };
  if (page.error) return html`<${ErrorAlert} error=${page.error} />`;
  if (!page.data) return html`<${Loading} />`;
  const { account, balance, keys } = page.data;
  const withBalance = { ...account, balanceUsd: balance.balanceUsd };
  return html`<p class="small"><a href="/console/admin">← All accounts</a></p>
    <${Card}
      title=${html`<span data-testid="account-title">${account.email}</span>`}
      subtitle=${`${account.role} · created ${shortDate(account.createdAt)}`}
      actions=${html`
        ${account.disabled ? html`<${Badge} kind="danger">disabled<//>` : html`<${Badge} kind="success">active<//>`}`}
    >
      <div class="stats">
        <div class="stat stat-accent"><div class="stat-label">Available</div><div class="stat-value" data-testid="account-available">${usd(balance.availableUsd)}</div><div class="stat-hint muted small">What new requests can spend</div></div>
        <div class="stat"><div class="stat-label">Balance</div><div class="stat-value" data-testid="account-balance">${usd(balance.balanceUsd)}</div><div class="stat-hint muted small">Top-ups and adjustments less charges</div></div>
        <div class="stat"><div class="stat-label">Held</div><div class="stat-value">${usd(balance.heldUsd)}</div><div class="stat-hint muted small">Reserved by running requests</div></div>
      </div>
      <${DetailList} rows=${[["Account id", html`<code>${account.id}</code>`], ["Limits", limitsText(account.limits)]]} />
      <div class="form-actions wrap">
        <button type="button" class="button primary" onClick=${() => setDialog("topup")}>Top up</button>
        <button type="button" class="button" onClick=${() => setDialog("adjust")}>Adjust balance</button>
        <button type="button" class="button" onClick=${() => setDialog("limits")}>Limits</button>
        ${account.id !== self.id &&
        html`<button type="button" class=${"button " + (account.disabled ? "" : "danger-outline")} onClick=${() => setDialog("toggle")}>${account.disabled ? "Enable" : "Disable"}</button>`}
      </div>
    <//>
    <${KeysCard} keys=${keys} />
    <${StatementCard} accountId=${account.id} version=${version} />
    <${UsageCard} accountId=${account.id} />
    <${WebhooksCard} accountId=${account.id} />
    ${dialog === "topup" && html`<${TopUpDialog} account=${withBalance} onDone=${changed} onClose=${() => setDialog(null)} />`}
    ${dialog === "adjust" && html`<${AdjustDialog} account=${account} balanceUsd=${balance.balanceUsd} onDone=${changed} onClose=${() => setDialog(null)} />`}
    ${dialog === "limits" && html`<${LimitsDialog} account=${account} onDone=${changed} onClose=${() => setDialog(null)} />`}
    ${dialog === "toggle" &&
    html`<${ConfirmDialog}
      title=${(account.disabled ? "Enable " : "Disable ") + account.email + "?"}
      confirmLabel=${account.disabled ? "Enable account" : "Disable account"}
      danger=${!account.disabled}
      onConfirm=${async () => {
        await post(`/admin/accounts/${encodeURIComponent(account.id)}/${account.disabled ? "enable" : "disable"}`);
        changed();
      }}
      onClose=${() => setDialog(null)}
    >
      <p>${account.disabled ? "The account can sign in and its keys work again." : "Its keys stop working and its console sessions end. Its balance is kept."}</p>
    <//>`}`;
}
