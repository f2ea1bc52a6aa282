// Account: who is signed in, and changing the password (other sessions are signed out by the server).
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { post } from "../lib/api.js";
import { Alert, Card, DetailList, Field, PageHeader } from "../components/ui.js";

const MIN_LENGTH = 8; // the auth service's minimum

function ChangePassword({ onChanged }) {
  const [form, setForm] = useState({ current: "", next: "", repeat: "" });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null)); // what was thrown: an ApiError, or any Error
  const [done, setDone] = useState(false);
  const set = (name) => (event) => setForm({ ...form, [name]: event.target.value });
  const mismatch = form.repeat && form.next !== form.repeat ? "The two new passwords differ" : null;
  const tooShort = form.next && form.next.length < MIN_LENGTH ? `At least ${MIN_LENGTH} characters` : null;

  const submit = async (event) => {
    event.preventDefault();
    if (mismatch || tooShort) return;
    setBusy(true);
    setError(null);
    setDone(false);
    try {
      await post("/password", { currentPassword: form.current, newPassword: form.next });
      setForm({ current: "", next: "", repeat: "" });
      setDone(true);
      onChanged?.();
    } catch (/** @type {any} */ failure) {
      setError(failure.code === "invalid_credentials" ? "The current password is not right." : failure.message);
    }
    setBusy(false);
  };

  return html`<${Card} title="Change password" subtitle="Your other signed-in sessions end when you change it.">
    <form class="form narrow" onSubmit=${submit}>
      <${Alert}>${error}<//>
      ${done && html`<${Alert} kind="success">Password changed.<//>`}
      <${Field} label="Current password"><input type="password" name="currentPassword" autocomplete="current-password" required value=${form.current} onInput=${set("current")} /><//>
      <${Field} label="New password" error=${tooShort} hint=${`At least ${MIN_LENGTH} characters`}><input type="password" name="newPassword" autocomplete="new-password" required value=${form.next} onInput=${set("next")} /><//>
      <${Field} label="Repeat the new password" error=${mismatch}><input type="password" name="repeatPassword" autocomplete="new-password" required value=${form.repeat} onInput=${set("repeat")} /><//>
      <div class="form-actions"><button type="submit" class="button primary" disabled=${busy || !form.current || !form.next || !!mismatch || !!tooShort}>${busy ? "Saving…" : "Change password"}</button></div>
    </form>
  <//>`;
}

export function AccountPage({ account, onPasswordChanged }) {
  return html`<${PageHeader} title="Account" />
    <${Card} title="Signed in as">
      <${DetailList} rows=${[["Email", account.email], ["Role", account.role], ["Account id", html`<code>${account.id}</code>`]]} />
    <//>
    <${ChangePassword} onChanged=${onPasswordChanged} />`;
}
