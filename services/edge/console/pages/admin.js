// Admin (role admin only): accounts and their balances, the price table, models and their channels.
import { useState } from "/console/vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get, post, put } from "../lib/api.js";
import { dateTime, shortDate, usd } from "../lib/format.js";
import { Alert, Badge, Card, ConfirmDialog, Empty, ErrorAlert, Field, Loading, Modal, PageHeader, useLoad } from "../components/ui.js";

const MONEY = /^\d{1,9}(\.\d{1,6})?$/;
const TABS = [
  { path: "/admin", label: "Accounts" },
  { path: "/admin/prices", label: "Prices" },
  { path: "/admin/models", label: "Models" },
];

function Tabs({ path }) {
  return html`<nav class="tabs" aria-label="Admin sections">
    ${TABS.map((tab) => html`<a href=${"/console" + tab.path} class=${tab.path === path ? "tab active" : "tab"} aria-current=${tab.path === path ? "page" : undefined}>${tab.label}</a>`)}
  </nav>`;
}

/** Runs a form's action with busy and error state; returns whether it succeeded. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (action) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (failure) {
      setError(failure);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

function CreateAccountForm({ onCreated }) {
  const [form, setForm] = useState({ email: "", password: "", role: "user" });
  const [done, setDone] = useState(null);
  const action = useAction();
  const set = (name) => (event) => setForm({ ...form, [name]: event.target.value });
  const submit = async (event) => {
    event.preventDefault();
    let created;
    const ok = await action.run(async () => (created = await post("/admin/accounts", { ...form, email: form.email.trim() })));
    if (!ok) return;
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

function TopUpDialog({ account, onDone, onClose }) {
  const [amount, setAmount] = useState("");
  const [note, setNote] = useState("");
  const action = useAction();
  const amountError = amount && !MONEY.test(amount.trim()) ? "A dollar amount such as 10 or 25.50" : null;
  const submit = async (event) => {
    event?.preventDefault();
    if (amountError || !amount.trim() || !note.trim()) return;
    if (await action.run(() => post(`/admin/accounts/${encodeURIComponent(account.id)}/topup`, { usd: amount.trim(), note: note.trim() }))) {
      onDone();
      onClose();
    }
  };
  return html`<${Modal}
    title=${"Top up " + account.email}
    onClose=${onClose}
    footer=${html`
      <button type="button" class="button" onClick=${onClose}>Cancel</button>
      <button type="submit" form="topup-form" class="button primary" disabled=${action.busy || !!amountError || !amount.trim() || !note.trim()}>${action.busy ? "Adding…" : "Add funds"}</button>`}
  >
    <form id="topup-form" class="form" onSubmit=${submit}>
      <p class="muted">Current balance: <strong>${usd(account.balanceUsd)}</strong></p>
      <${ErrorAlert} error=${action.error} />
      <${Field} label="Amount (USD)" error=${amountError}><input name="usd" inputMode="decimal" placeholder="10.00" value=${amount} onInput=${(event) => setAmount(event.target.value)} /><//>
      <${Field} label="Note" hint="Kept in the ledger, e.g. an invoice number"><input name="note" required value=${note} onInput=${(event) => setNote(event.target.value)} /><//>
    </form>
  <//>`;
}

const WHOLE = /^\d{1,7}$/;

/** An account's fair-share limits; an empty field puts that limit back to its default. */
function LimitsDialog({ account, onDone, onClose }) {
  const [max, setMax] = useState(account.limits.maxConcurrentJobs === null ? "" : String(account.limits.maxConcurrentJobs));
  const [rpm, setRpm] = useState(account.limits.requestsPerMinute === null ? "" : String(account.limits.requestsPerMinute));
  const action = useAction();
  const maxError = max.trim() && !(WHOLE.test(max.trim()) && Number(max) <= 100000) ? "A whole number from 0 (no limit) to 100000" : null;
  const rpmError = rpm.trim() && !(WHOLE.test(rpm.trim()) && Number(rpm) >= 1 && Number(rpm) <= 1000000) ? "A whole number from 1 to 1000000" : null;
  const submit = async (event) => {
    event?.preventDefault();
    if (maxError || rpmError) return;
    const body = { maxConcurrentJobs: max.trim() ? Number(max) : null, requestsPerMinute: rpm.trim() ? Number(rpm) : null };
    if (await action.run(() => put(`/admin/accounts/${encodeURIComponent(account.id)}/limits`, body))) {
      onDone();
      onClose();
    }
  };
  return html`<${Modal}
    title=${"Limits of " + account.email}
    onClose=${onClose}
    footer=${html`
      <button type="button" class="button" onClick=${onClose}>Cancel</button>
      <button type="submit" form="limits-form" class="button primary" disabled=${action.busy || !!maxError || !!rpmError}>${action.busy ? "Saving…" : "Save limits"}</button>`}
  >
    <form id="limits-form" class="form" onSubmit=${submit}>
      <${ErrorAlert} error=${action.error} />
      <${Field} label="Concurrent jobs" hint="Jobs it may run at once; empty: the service default; 0: no limit" error=${maxError}><input name="maxConcurrentJobs" inputMode="numeric" placeholder="default" value=${max} onInput=${(event) => setMax(event.target.value)} /><//>
      <${Field} label="Requests per minute" hint="Image requests it may start per minute, all keys together; empty: no limit" error=${rpmError}><input name="requestsPerMinute" inputMode="numeric" placeholder="no limit" value=${rpm} onInput=${(event) => setRpm(event.target.value)} /><//>
    </form>
  <//>`;
}

const limitsText = (limits) =>
  `${limits.maxConcurrentJobs === null ? "default" : limits.maxConcurrentJobs === 0 ? "no limit" : limits.maxConcurrentJobs} jobs · ${limits.requestsPerMinute === null ? "no rpm limit" : limits.requestsPerMinute + "/min"}`;

function AccountsSection({ self }) {
  const accounts = useLoad(() => get("/admin/accounts"));
  const [toppingUp, setToppingUp] = useState(null);
  const [toggling, setToggling] = useState(null);
  const [limiting, setLimiting] = useState(null);
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
              <td class="strong">${account.email}</td>
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
  return html`<tr class="editing">
    <td colspan="4">
      <form class="inline-form" onSubmit=${save}>
        <code>${price.model}</code> <span>${price.tier}</span>
        <input name="usd" aria-label="New price in USD" inputMode="decimal" class=${invalid ? "invalid" : ""} value=${amount} onInput=${(event) => setAmount(event.target.value)} />
        <input name="note" aria-label="Note" placeholder="Why (kept with the change)" class="grow" value=${note} onInput=${(event) => setNote(event.target.value)} />
        ${zero && html`<label><input type="checkbox" name="free" checked=${free} onChange=${(event) => setFree(event.target.checked)} /> Free: charge $0</label>`}
        <button type="submit" class="button small primary" disabled=${action.busy || blocked}>Save</button>
        <button type="button" class="button small" onClick=${onCancel}>Cancel</button>
      </form>
      <${ErrorAlert} error=${action.error} />
    </td>
  </tr>`;
}

function PricesSection() {
  const prices = useLoad(() => get("/admin/prices"));
  const [editing, setEditing] = useState(null);
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
    <${Card} title="Recorded changes">
      ${prices.data.changes.length === 0
        ? html`<${Empty} title="No price changes yet" />`
        : html`<div class="table-wrap"><table class="table">
            <thead><tr><th>When</th><th>Model</th><th>Tier</th><th class="num">Old</th><th class="num">New</th><th>By</th><th>Note</th></tr></thead>
            <tbody>
              ${prices.data.changes.map(
                (change) => html`<tr>
                  <td class="nowrap">${dateTime(change.changedAt)}</td>
                  <td><code>${change.model}</code></td>
                  <td>${change.tier}</td>
                  <td class="num">${change.oldUsd === null ? "—" : usd(change.oldUsd)}</td>
                  <td class="num">${usd(change.newUsd)}</td>
                  <td>${change.actor}</td>
                  <td>${change.note || html`<span class="muted">—</span>`}</td>
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

const SECTIONS = { "/admin": AccountsSection, "/admin/prices": PricesSection, "/admin/models": ModelsSection };

export function Admin({ path, account }) {
  const Section = SECTIONS[path];
  return html`<${PageHeader} title="Admin" subtitle="Accounts, balances, prices and the model catalog." />
    <${Tabs} path=${path} />
    ${Section ? html`<${Section} self=${account} />` : html`<${Empty} title="There is no such admin page" />`}`;
}
