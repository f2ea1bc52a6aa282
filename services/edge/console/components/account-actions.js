// What an admin does to one account: top it up, adjust its balance by a signed amount,
// set its limits. Used by the accounts list and by the account's own page.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { post, put } from "../lib/api.js";
import { usd } from "../lib/format.js";
import { ErrorAlert, Field, Modal } from "./ui.js";

/** USD as billing takes it: up to 12 whole digits and 6 decimals (micro-USD), as the CLI accepts. */
export const MONEY = /^\d{1,12}(\.\d{1,6})?$/;
const SIGNED_MONEY = /^-?\d{1,12}(\.\d{1,6})?$/;

/** Runs a form's action with busy and error state; returns whether it succeeded. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null)); // what was thrown: an ApiError, or any Error
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

export function TopUpDialog({ account, onDone, onClose }) {
  const [amount, setAmount] = useState("");
  const [note, setNote] = useState("");
  const action = useAction();
  const amountError = amount && !MONEY.test(amount.trim()) ? "A dollar amount such as 10, 25.50 or 0.000001" : null;
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
export function LimitsDialog({ account, onDone, onClose }) {
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

export const limitsText = (limits) =>
  `${limits.maxConcurrentJobs === null ? "default" : limits.maxConcurrentJobs === 0 ? "no limit" : limits.maxConcurrentJobs} jobs · ${limits.requestsPerMinute === null ? "no rpm limit" : limits.requestsPerMinute + "/min"}`;


/** A signed correction (a refund, a goodwill credit, a fix); the note is required and kept in the ledger. */
export function AdjustDialog({ account, balanceUsd, onDone, onClose }) {
  const [amount, setAmount] = useState("");
  const [note, setNote] = useState("");
  const action = useAction();
  const text = amount.trim();
  const amountError = text && (!SIGNED_MONEY.test(text) || /^-?0*\.?0*$/.test(text)) ? "A signed dollar amount other than 0, such as -1.50 or 2" : null;
  const ready = text && !amountError && note.trim();
  const submit = async (event) => {
    event?.preventDefault();
    if (!ready) return;
    if (await action.run(() => post(`/admin/accounts/${encodeURIComponent(account.id)}/adjust`, { usd: text, note: note.trim() }))) {
      onDone();
      onClose();
    }
  };
  return html`<${Modal}
    title=${"Adjust the balance of " + account.email}
    onClose=${onClose}
    footer=${html`
      <button type="button" class="button" onClick=${onClose}>Cancel</button>
      <button type="submit" form="adjust-form" class="button primary" disabled=${action.busy || !ready}>${action.busy ? "Saving…" : "Adjust balance"}</button>`}
  >
    <form id="adjust-form" class="form" onSubmit=${submit}>
      <p class="muted">Current balance: <strong>${usd(balanceUsd)}</strong></p>
      <${ErrorAlert} error=${action.error} />
      <${Field} label="Amount (USD, signed)" hint="Positive credits the account, negative debits it" error=${amountError}><input name="usd" inputMode="decimal" placeholder="-1.50" value=${amount} onInput=${(event) => setAmount(event.target.value)} /><//>
      <${Field} label="Why" hint="Required; kept in the ledger with your email"><input name="note" required value=${note} onInput=${(event) => setNote(event.target.value)} /><//>
    </form>
  <//>`;
}
