// Admin (role admin only): the overview, accounts and their balances, one account's page,
// channel health, the price table, models and their channels.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get, post, put } from "../lib/api.js";
import { dateTime, shortDate, usd } from "../lib/format.js";
import { Alert, Badge, Card, ConfirmDialog, Empty, ErrorAlert, Field, Loading, PageHeader, useLoad } from "../components/ui.js";

/** @typedef {import("../lib/answers.js").AdminAccountsAnswer["accounts"][number]} AdminAccountRow */
/** @template T @typedef {import("../lib/answers.js").Loaded<T>} Loaded */
import { LimitsDialog, MONEY, TopUpDialog, limitsText, useAction } from "../components/account-actions.js";
import { OverviewSection } from "./admin-overview.js";
import { ChannelsSection } from "./admin-channels.js";
import { AccountSection } from "./admin-account.js";
import { NewPriceForm } from "../components/new-price.js";

const TABS = [
  { path: "/admin", label: "Accounts" },
  { path: "/admin/overview", label: "Overview" },
  { path: "/admin/channels", label: "Channels" },
  { path: "/admin/prices", label: "Prices" },
  { path: "/admin/models", label: "Models" },
];

/** The tab a path belongs to: an account's page (/admin/accounts/<id>) is under Accounts. */
const tabOf = (path) => (path.startsWith("/admin/accounts/") ? "/admin" : path);

function Tabs({ path }) {
  const current = tabOf(path);
  return html`<nav class="tabs" aria-label="Admin sections">
    ${TABS.map((tab) => html`<a href=${"/console" + tab.path} class=${tab.path === current ? "tab active" : "tab"} aria-current=${tab.path === current ? "page" : undefined}>${tab.label}</a>`)}
  </nav>`;
}

function CreateAccountForm({ onCreated }) {
  const [form, setForm] = useState({ email: "", password: "", role: "user" });
  const [done, setDone] = useState(/** @type {string | null} */ (null));
  const action = useAction();
  const set = (name) => (event) => setForm({ ...form, [name]: event.target.value });
  const submit = async (event) => {
    event.preventDefault();
    /** @type {import("../lib/answers.js").AdminAccountAnswer | undefined} */
    let created;
    const ok = await action.run(async () => (created = await post("/admin/accounts", { ...form, email: form.email.trim() })));
    if (!ok || !created) return;
    setDone(created.account.email);
    setForm({ email: "", password: "", role: "user" });
    onCreated();
  };
  return html`<${Card} title="Create an account" subtitle="Give the person their email and password; they can change the password after signing in.">
    <form class="form" onSubmit=${submit}>
      <${ErrorAlert} error=${action.error} />
      ${done && html`<${Alert} kind="success">Account ${done} created. Top it up below so it can spend.<//>`}
      <div class="form-grid">
        <${Field} label="Email"><input type="email" name="email" required value=${form.email} onInput=${set("email")} /><//>
        <${Field} label="Password" hint="At least 8 characters"><input type="text" name="password" required autocomplete="new-password" value=${form.password} onInput=${set("password")} /><//>
        <${Field} label="Role">
          <select name="role" value=${form.role} onChange=${set("role")}>
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        <//>
      </div>
      <div class="form-actions"><button type="submit" class="button primary" disabled=${action.busy || !form.email || !form.password}>${action.busy ? "Creating…" : "Create account"}</button></div>
    </form>
  <//>`;
}

function AccountsSection({ self }) {
  /** @type {Loaded<import("../lib/answers.js").AdminAccountsAnswer>} */
  const accounts = useLoad(() => get("/admin/accounts"));
  const [toppingUp, setToppingUp] = useState(/** @type {AdminAccountRow | null} */ (null));
  const [toggling, setToggling] = useState(/** @type {AdminAccountRow | null} */ (null));
  const [limiting, setLimiting] = useState(/** @type {AdminAccountRow | null} */ (null));
  const list = accounts.data?.accounts ?? [];
  return html`<${CreateAccountForm} onCreated=${accounts.reload} />
    <${Card} title="Accounts" subtitle=${accounts.data ? `${list.length} account${list.length === 1 ? "" : "s"}` : ""}>
      <${ErrorAlert} error=${accounts.error} />
      ${!accounts.data && !accounts.error && html`<${Loading} />`}
      ${accounts.data &&
      html`<div class="table-wrap"><table class="table">
        <thead><tr><th>Email</th><th>Role</th><th>Status</th><th>Created</th><th>Limits</th><th class="num">Balance</th><th></th></tr></thead>
        <tbody>
          ${list.map(
            (account) => html`<tr key=${account.id} data-account-email=${account.email}>
              <td class="strong"><a href=${"/console/admin/accounts/" + encodeURIComponent(account.id)}>${account.email}</a></td>
              <td>${account.role === "admin" ? html`<${Badge} kind="info">admin<//>` : "user"}</td>
              <td>${account.disabled ? html`<${Badge} kind="danger">disabled<//>` : html`<${Badge} kind="success">active<//>`}</td>
              <td class="nowrap">${shortDate(account.createdAt)}</td>
              <td class="nowrap" data-testid="account-limits">${limitsText(account.limits)}</td>
              <td class="num" data-testid="account-balance">${usd(account.balanceUsd)}</td>
              <td class="actions">
                <button type="button" class="button small" onClick=${() => setToppingUp(account)}>Top up</button>
                <button type="button" class="button small" onClick=${() => setLimiting(account)}>Limits</button>
                ${account.id !== self.id &&
                html`<button type="button" class=${"button small " + (account.disabled ? "" : "danger-outline")} onClick=${() => setToggling(account)}>
                  ${account.disabled ? "Enable" : "Disable"}
                </button>`}
              </td>
            </tr>`,
          )}
        </tbody>
      </table></div>`}
    <//>
    ${limiting && html`<${LimitsDialog} account=${limiting} onDone=${accounts.reload} onClose=${() => setLimiting(null)} />`}
    ${toppingUp && html`<${TopUpDialog} account=${toppingUp} onDone=${accounts.reload} onClose=${() => setToppingUp(null)} />`}
    ${toggling &&
    html`<${ConfirmDialog}
      title=${(toggling.disabled ? "Enable " : "Disable ") + toggling.email + "?"}
      confirmLabel=${toggling.disabled ? "Enable account" : "Disable account"}
      danger=${!toggling.disabled}
      onConfirm=${async () => {
        await post(`/admin/accounts/${encodeURIComponent(toggling.id)}/${toggling.disabled ? "enable" : "disable"}`);
        accounts.reload();
      }}
      onClose=${() => setToggling(null)}
    >
      <p>${toggling.disabled ? "The account can sign in and its keys work again." : "Its keys stop working and its console sessions end. Its balance is kept."}</p>
    <//>`}`;
}

function PriceEditor({ price, onSaved, onCancel }) {
  const [amount, setAmount] = useState(price.usd);
  const [note, setNote] = useState("");
  const [free, setFree] = useState(false);
  const action = useAction();
  const invalid = !MONEY.test(amount.trim());
  // A price of $0 gives the model away: the API refuses it unless it is marked free.
  const zero = !invalid && /^0*\.?0*$/.test(amount.trim());
  const blocked = invalid || (zero && !free);
  const save = async (event) => {
    event.preventDefault();
    if (blocked) return;
    const body = { model: price.model, tier: price.tier, usd: amount.trim() };
    if (zero) body.free = true;
    if (note.trim()) body.note = note.trim();
    if (await action.run(() => put("/admin/prices", body))) onSaved();
  };
  // The row keeps the table's four cells; its inputs join the form by its id (a form may not sit between rows).
  const form = `price-${price.model}-${price.tier}`;
  return html`<tr class="editing">
    <td><code>${price.model}</code></td>
    <td>${price.tier}</td>
    <td class="num price-edit">
      <form id=${form} onSubmit=${save}></form>
      <input form=${form} name="usd" aria-label="New price in USD" inputMode="decimal" class=${invalid ? "invalid" : ""} value=${amount} onInput=${(event) => setAmount(event.target.value)} />
      <input form=${form} name="note" aria-label="Note" placeholder="Why (kept with the change)" value=${note} onInput=${(event) => setNote(event.target.value)} />
      ${zero && html`<label class="small"><input form=${form} type="checkbox" name="free" checked=${free} onChange=${(event) => setFree(event.target.checked)} /> Free: charge $0</label>`}
      <${ErrorAlert} error=${action.error} />
    </td>
    <td class="actions">
      <button form=${form} type="submit" class="button small primary" disabled=${action.busy || blocked}>Save</button>
      <button type="button" class="button small" onClick=${onCancel}>Cancel</button>
    </td>
  </tr>`;
}

function PricesSection() {
  /** @type {Loaded<import("../lib/answers.js").PricesAnswer>} */
  const prices = useLoad(() => get("/admin/prices"));
  const [editing, setEditing] = useState(/** @type {string | null} */ (null));
  const id = (price) => `${price.model}/${price.tier}`;
  if (prices.error) return html`<${ErrorAlert} error=${prices.error} />`;
  if (!prices.data) return html`<${Loading} />`;
  const saved = () => {
    setEditing(null);
    prices.reload();
  };
  return html`<${Card} title="Price table" subtitle="USD per image, flat per size tier. A change applies to requests that start after it.">
      <div class="table-wrap"><table class="table">
        <thead><tr><th>Model</th><th>Tier</th><th class="num">Price</th><th></th></tr></thead>
        <tbody>
          ${prices.data.prices.map((price) =>
            editing === id(price)
              ? html`<${PriceEditor} key=${id(price)} price=${price} onSaved=${saved} onCancel=${() => setEditing(null)} />`
              : html`<tr key=${id(price)}>
                  <td><code>${price.model}</code></td>
                  <td>${price.tier}</td>
                  <td class="num">${usd(price.usd)}</td>
                  <td class="actions"><button type="button" class="button small" onClick=${() => setEditing(id(price))}>Edit</button></td>
                </tr>`,
          )}
        </tbody>
      </table></div>
    <//>
    <${NewPriceForm} onSaved=${saved} />
    <${Card} title="Recorded changes">
      ${prices.data.changes.length === 0
        ? html`<${Empty} title="No price changes yet" />`
        : html`<div class="table-wrap"><table class="table stacked">
            <thead><tr><th>When</th><th>Model</th><th>Tier</th><th class="num">Old</th><th class="num">New</th><th>By</th><th>Note</th></tr></thead>
            <tbody>
              ${prices.data.changes.map(
                (change) => html`<tr>
                  <td class="nowrap">${dateTime(change.changedAt)}</td>
                  <td data-label="Model"><code>${change.model}</code></td>
                  <td data-label="Tier">${change.tier}</td>
                  <td class="num" data-label="Old">${change.oldUsd === null ? "—" : usd(change.oldUsd)}</td>
                  <td class="num" data-label="New">${usd(change.newUsd)}</td>
                  <td data-label="By">${change.actor}</td>
                  <td data-label="Note">${change.note || html`<span class="muted">—</span>`}</td>
                </tr>`,
              )}
            </tbody>
          </table></div>`}
    <//>`;
}

function Health({ healthy }) {
  return html`<span class=${"health " + (healthy ? "ok" : "down")}>${healthy ? "healthy" : "unhealthy"}</span>`;
}

function ModelsSection() {
  /** @type {Loaded<import("../lib/answers.js").AdminModelsAnswer>} */
  const models = useLoad(() => get("/admin/models"));
  if (models.error) return html`<${ErrorAlert} error=${models.error} />`;
  if (!models.data) return html`<${Loading} />`;
  return html`<div class="model-grid">
    ${models.data.models.map(
      (model) => html`<${Card}
        title=${html`<code>${model.id}</code>`}
        subtitle=${`${model.family} family · tiers ${model.tiers.join(", ")}${model.edits ? " · edits images" : ""}`}
        actions=${model.sandbox && html`<${Badge} kind="warning">sandbox<//>`}
      >
        <table class="table compact">
          <thead><tr><th>Channel</th><th>Provider</th><th>Health</th></tr></thead>
          <tbody>
            ${model.channels.map(
              (channel) => html`<tr>
                <td>${channel.name}</td>
                <td><code>${channel.provider}</code></td>
                <td><${Health} healthy=${channel.healthy} /></td>
              </tr>`,
            )}
          </tbody>
        </table>
      <//>`,
    )}
  </div>`;
}

const SECTIONS = {
  "/admin": AccountsSection,
  "/admin/overview": OverviewSection,
  "/admin/channels": ChannelsSection,
  "/admin/prices": PricesSection,
  "/admin/models": ModelsSection,
};
const ACCOUNT_PAGE = /^\/admin\/accounts\/([^/]+)$/;

export function Admin({ path, account }) {
  const accountId = ACCOUNT_PAGE.exec(path)?.[1];
  const Section = accountId ? AccountSection : SECTIONS[path];
  return html`<${PageHeader} title="Admin" subtitle="Requests and money across accounts, accounts, channels, prices and the model catalog." />
    <${Tabs} path=${path} />
    ${Section ? html`<${Section} self=${account} accountId=${accountId && decodeURIComponent(accountId)} key=${path} />` : html`<${Empty} title="There is no such admin page" />`}`;
}
