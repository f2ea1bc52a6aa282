// The one way the console talks to /console/api: JSON in and out, the CSRF token on every
// state-changing call, and a 401 (other than wrong credentials) sends the user back to sign-in.

let csrfToken = null;
let onSignedOut = () => {};

export class ApiError extends Error {
  constructor(status, code, message, retryAfterSeconds) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export function setCsrfToken(token) {
  csrfToken = token;
}

export function whenSignedOut(handler) {
  onSignedOut = handler;
}

const SAFE_METHODS = new Set(["GET", "HEAD"]);

async function errorFrom(response) {
  const body = await response.json().catch(() => null);
  const code = body?.error?.code ?? "http_" + response.status;
  const message = body?.error?.message ?? `The server answered ${response.status} ${response.statusText}`;
  const retryAfter = Number(response.headers.get("retry-after"));
  return new ApiError(response.status, code, message, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null);
}

/** Another tab may have signed in again, replacing the session and its token: fetch the current one. */
async function refreshCsrfToken() {
  const response = await fetch("/console/api/me", { headers: { accept: "application/json" }, credentials: "same-origin" });
  if (!response.ok) return false;
  csrfToken = (await response.json()).csrfToken;
  return true;
}

export async function api(method, path, body, { retried = false } = {}) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (!SAFE_METHODS.has(method) && csrfToken) headers["x-csrf-token"] = csrfToken;
  let response;
  try {
    response = await fetch("/console/api" + path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "network_error", "Could not reach the server. Check your connection and try again.", null);
  }
  if (!response.ok) {
    const error = await errorFrom(response);
    if (error.code === "csrf_failed" && !retried && (await refreshCsrfToken())) return api(method, path, body, { retried: true });
    // Wrong credentials (sign-in, change password) are answered on the form, not by leaving the page.
    if (response.status === 401 && error.code !== "invalid_credentials") onSignedOut();
    throw error;
  }
  if (response.status === 204) return null;
  return response.json();
}

export const get = (path) => api("GET", path);
export const post = (path, body = {}) => api("POST", path, body);
export const put = (path, body) => api("PUT", path, body);
export const del = (path) => api("DELETE", path);

/** A query string from the filled-in fields only. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? "?" + text : "";
}
