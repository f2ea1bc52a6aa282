// The one way the console talks to /console/api: JSON in and out, the CSRF token on every
// state-changing call, and a 401 (other than wrong credentials) sends the user back to sign-in.

/** @type {string | null} */
let csrfToken = null;
let onSignedOut = () => {};

export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status, 0 when the server could not be reached
   * @param {string} code the API's error code (docs/console.md), or http_<status>
   * @param {string} message
   * @param {number | null} retryAfterSeconds
   */
  constructor(status, code, message, retryAfterSeconds) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** @param {string | null} token */
export function setCsrfToken(token) {
  csrfToken = token;
}

/** @param {() => void} handler */
export function whenSignedOut(handler) {
  onSignedOut = handler;
}

const SAFE_METHODS = new Set(["GET", "HEAD"]);

/** @param {Response} response */
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

/**
 * The server's answer to a call, once it is known not to be an error (an error is thrown as ApiError).
 * @param {string} method
 * @param {string} path
 * @param {unknown} body
 * @param {string} accept
 * @returns {Promise<Response>}
 */
async function send(method, path, body, accept, { retried = false } = {}) {
  /** @type {Record<string, string>} */
  const headers = { accept };
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
    if (error.code === "csrf_failed" && !retried && (await refreshCsrfToken())) return send(method, path, body, accept, { retried: true });
    // Wrong credentials (sign-in, change password) are answered on the form, not by leaving the page.
    if (response.status === 401 && error.code !== "invalid_credentials") onSignedOut();
    throw error;
  }
  return response;
}

/**
 * The answer's JSON, typed `any`: the caller names its type from lib/answers.js.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  const response = await send(method, path, body, "application/json");
  if (response.status === 204) return null;
  return response.json();
}

/**
 * A POST whose answer may be server-sent events: the Response itself, for its headers and body
 * (lib/events.js reads them). Refusals before the stream began are thrown as ApiError, as by api().
 * @param {string} path
 * @param {unknown} body
 */
export const postForEvents = (path, body) => send("POST", path, body, "text/event-stream, application/json");

/** @param {string} path */
export const get = (path) => api("GET", path);
/** @param {string} path @param {unknown} [body] */
export const post = (path, body = {}) => api("POST", path, body);
/** @param {string} path @param {unknown} body */
export const put = (path, body) => api("PUT", path, body);
/** @param {string} path */
export const del = (path) => api("DELETE", path);

/** A query string from the filled-in fields only. */
/** @param {Record<string, string | number | null | undefined>} params */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? "?" + text : "";
}
