import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, Role, type Account, type AuthService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { fromRefusal, refuse } from "./errors.ts";

// The console's session: an opaque token in an HttpOnly cookie, checked with auth
// on every call (auth alone knows whether it was signed out, expired or disabled),
// plus a CSRF token that every state-changing call must echo in a header.

export const SESSION_COOKIE = "orvado_session";
const COOKIE_PATH = "/console";
const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface SignedInRequest {
  account: Account;
  csrfToken: string;
  token: string;
}

const sessions = new WeakMap<FastifyRequest, SignedInRequest>();

/** The session the onRequest hook found; only reachable from routes behind it. */
export function sessionOf(request: FastifyRequest): SignedInRequest {
  const session = sessions.get(request);
  if (!session) throw new Error("sessionOf called on a route without the session hook");
  return session;
}

/** Secure whenever the browser reached us over TLS, directly or through a proxy that says so. */
function overTls(request: FastifyRequest): boolean {
  const forwarded = request.headers["x-forwarded-proto"];
  const proto = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim().toLowerCase();
  return request.protocol === "https" || proto === "https";
}

const cookieOptions = (request: FastifyRequest) => ({
  path: COOKIE_PATH,
  httpOnly: true,
  sameSite: "lax" as const,
  secure: overTls(request),
});

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAtMs: number) {
  reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions(request), expires: new Date(expiresAtMs) });
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply) {
  reply.clearCookie(SESSION_COOKIE, cookieOptions(request));
}

export const sessionToken = (request: FastifyRequest) => request.cookies[SESSION_COOKIE] ?? "";

/** Equal-length digests through timingSafeEqual, so a guess learns nothing from the time a compare takes. */
export function sameCsrfToken(sent: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();
  return sent !== "" && timingSafeEqual(digest(sent), digest(expected));
}

/** onRequest hook: a live session, and on state-changing calls the CSRF header that goes with it. */
export function requireSession(auth: Client<typeof AuthService>) {
  return async (request: FastifyRequest) => {
    const token = sessionToken(request);
    if (token === "") throw refuse(ErrorCode.NOT_SIGNED_IN, "Not signed in: sign in to the console first");
    const answer = await auth.getSession({ sessionToken: token });
    if (answer.result.case !== "session") {
      const refusal = fromRefusal(answer.result.value);
      // A disabled account's session is as good as ended.
      throw refusal.code === ErrorCode.ACCOUNT_DISABLED ? refuse(ErrorCode.NOT_SIGNED_IN, refusal.message) : refusal;
    }
    const { account, csrfToken } = answer.result.value;
    if (!account) throw refuse(ErrorCode.INTERNAL_ERROR, "The auth service answered without an account");
    if (STATE_CHANGING.has(request.method)) {
      const header = request.headers["x-csrf-token"];
      const sent = typeof header === "string" ? header : "";
      if (!sameCsrfToken(sent, csrfToken)) {
        throw refuse(ErrorCode.CSRF_FAILED, sent === "" ? "The x-csrf-token header is missing" : "The x-csrf-token header does not match the session");
      }
    }
    sessions.set(request, { account, csrfToken, token });
  };
}

/** onRequest hook for /admin routes, after requireSession. */
export async function requireAdmin(request: FastifyRequest) {
  if (sessionOf(request).account.role !== Role.ADMIN) throw refuse(ErrorCode.FORBIDDEN, "This needs an admin account");
}
