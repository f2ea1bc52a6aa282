// Sign-in: email and password; wrong credentials and too many attempts are answered on the form.
import { useEffect, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { post } from "../lib/api.js";
import { Alert, Field } from "../components/ui.js";

function waitText(seconds) {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

/** Seconds left until `until` (a timestamp), ticking once a second. */
function useCountdown(until) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!until) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [until]);
  return until ? Math.max(0, Math.ceil((until - now) / 1000)) : 0;
}

export function SignIn({ onSignedIn }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null)); // what was thrown: an ApiError, or any Error
  const [blockedUntil, setBlockedUntil] = useState(/** @type {number | null} */ (null));
  const secondsLeft = useCountdown(blockedUntil);
  const blocked = secondsLeft > 0;

  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await post("/session", { email: email.trim(), password }));
    } catch (/** @type {any} */ failure) {
      if (failure.code === "too_many_attempts") setBlockedUntil(Date.now() + (failure.retryAfterSeconds ?? 60) * 1000);
      setError(failure);
      setBusy(false);
    }
  };

  const message = () => {
    if (!error) return null;
    if (error.code === "too_many_attempts") {
      return blocked ? `Too many sign-in attempts. Try again in ${waitText(secondsLeft)}.` : "You can try signing in again now.";
    }
    if (error.code === "invalid_credentials") return "That email and password do not match an account.";
    if (error.code === "account_disabled") return "This account is disabled. Ask your Orvado administrator.";
    return error.message;
  };

  return html`<div class="auth-page">
    <form class="auth-card" onSubmit=${submit} noValidate>
      <div class="auth-brand">
        <img src="/console/favicon.svg" alt="" width="40" height="40" />
        <div>
          <h1>Sign in to Orvado</h1>
          <p class="muted">Image generation, billed in USD from your balance.</p>
        </div>
      </div>
      <${Alert} kind=${error?.code === "too_many_attempts" && !blocked ? "info" : "error"}>${message()}<//>
      <${Field} label="Email">
        <input type="email" name="email" autocomplete="username" required autofocus value=${email} onInput=${(event) => setEmail(event.target.value)} />
      <//>
      <${Field} label="Password">
        <input type="password" name="password" autocomplete="current-password" required value=${password} onInput=${(event) => setPassword(event.target.value)} />
      <//>
      <button type="submit" class="button primary block" disabled=${busy || blocked || !email || !password}>
        ${busy ? "Signing in…" : "Sign in"}
      </button>
      <p class="muted small center">Accounts are created by your Orvado administrator.</p>
    </form>
  </div>`;
}
