import type { Db } from "@orvado/db";
import { refusal, type Logger } from "@orvado/core";
import { ErrorCode, type ConsoleSessionSchema, type Refusal } from "@orvado/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { checkPassword } from "./input.ts";
import { sameKeyHash } from "./keys.ts";
import { hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from "./passwords.ts";
import { accountMessage } from "./messages.ts";
import { csrfTokenFor, hashSessionToken, hasSessionTokenShape, newSessionToken } from "./session-tokens.ts";
import {
  deleteAccountSessions,
  deleteExpiredSessions,
  deleteSession,
  findSession,
  insertSession,
  touchSession,
  type SessionWithAccount,
} from "./session-store.ts";
import { SignInLimiter, type SignInLimitPolicy } from "./sign-in-limit.ts";
import { findAccountByEmail, passwordHashOf, setPasswordHash } from "./store.ts";

export interface SessionPolicy {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, however busy. */
  maxMs: number;
}

export const DEFAULT_SESSION_POLICY: SessionPolicy = { idleMs: 12 * 3_600_000, maxMs: 7 * 86_400_000 };

export const SESSION_REFUSALS = {
  invalidCredentials: "The email or password is not correct",
  tooManyAttempts: "Too many failed sign-in attempts; try again later",
  disabled: "The account is disabled",
  notSignedIn: "Not signed in, or the session has ended: sign in again",
} as const;

/** last_seen_at is written at most this often, so reading a session is not a write per call. */
const TOUCH_INTERVAL_MS = 60_000;
const SWEEP_INTERVAL_MS = 10 * 60_000;

type Session = MessageInitShape<typeof ConsoleSessionSchema>;
type Refused = { ok: false; refusal: Refusal };
const refused = (code: ErrorCode, message: string, retryAfterSeconds = 0): Refused => ({
  ok: false,
  refusal: refusal(code, message, { retryAfterSeconds }) as Refusal,
});

/**
 * A hash computed once per process for unknown emails: verifying a password against
 * it costs what a real check costs, so response time does not tell which emails exist.
 */
let decoyHash: Promise<string> | undefined;
const decoy = () => (decoyHash ??= hashPassword("orvado decoy password"));

export class ConsoleSessions {
  readonly #limiter: SignInLimiter;
  #lastSweep = 0;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly policy: SessionPolicy,
    limits: SignInLimitPolicy,
    private readonly now: () => number,
  ) {
    this.#limiter = new SignInLimiter(db, limits, now);
  }

  async signIn(
    emailText: string,
    password: string,
    clientIp: string,
  ): Promise<{ ok: true; token: string; session: Session } | Refused> {
    const email = emailText.trim().toLowerCase().slice(0, 254);
    const limit = await this.#limiter.admit(email, clientIp);
    if (limit.blocked) {
      this.logger.warn({ clientIp }, "sign-in refused: too many failed attempts");
      return refused(ErrorCode.TOO_MANY_ATTEMPTS, SESSION_REFUSALS.tooManyAttempts, limit.retryAfterSeconds);
    }
    const account = email === "" ? null : await findAccountByEmail(this.db, email);
    // An over-long password is checked anyway (same cost) but can never match: none is stored that long.
    const passwordOk =
      (await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), account?.password_hash ?? (await decoy()))) &&
      password.length <= MAX_PASSWORD_LENGTH;
    // The attempt was counted as a failure when admitted; a wrong one just stays counted.
    if (!account || !passwordOk) {
      return refused(ErrorCode.INVALID_CREDENTIALS, SESSION_REFUSALS.invalidCredentials);
    }
    await this.#limiter.succeeded(email, limit.attemptIds);
    // Said only after the right password, so a guesser learns nothing about the account.
    if (account.disabled) return refused(ErrorCode.ACCOUNT_DISABLED, SESSION_REFUSALS.disabled);
    const token = newSessionToken();
    const nowMs = this.now();
    const expiresAtMs = nowMs + this.policy.maxMs;
    await insertSession(this.db, { tokenHash: hashSessionToken(token), accountId: account.account_id, nowMs, expiresAtMs });
    await this.#sweep(nowMs);
    this.logger.info({ accountId: account.account_id }, "console sign-in");
    return { ok: true, token, session: { account: accountMessage(account), csrfToken: csrfTokenFor(token), expiresAtUnixMs: BigInt(expiresAtMs) } };
  }

  async get(token: string): Promise<{ ok: true; session: Session; row: SessionWithAccount } | Refused> {
    const row = await this.#live(token);
    if (!row.ok) return row;
    return {
      ok: true,
      row: row.row,
      session: { account: accountMessage(row.row.account), csrfToken: csrfTokenFor(token), expiresAtUnixMs: BigInt(row.row.expires_at.getTime()) },
    };
  }

  async signOut(token: string): Promise<void> {
    if (hasSessionTokenShape(token)) await deleteSession(this.db, hashSessionToken(token));
  }

  /** Changes the password of the session's account and ends its other sessions. */
  async changePassword(token: string, current: string, next: string): Promise<{ ok: true } | Refused> {
    const live = await this.#live(token);
    if (!live.ok) return live;
    const { account } = live.row;
    checkPassword(next);
    // A stolen session must not become a way to guess the password without limit:
    // the attempt counts against the account before the password is checked.
    const limit = await this.#limiter.admit(account.email, "");
    if (limit.blocked) return refused(ErrorCode.TOO_MANY_ATTEMPTS, SESSION_REFUSALS.tooManyAttempts, limit.retryAfterSeconds);
    const stored = await passwordHashOf(this.db, account.account_id);
    if (stored === null || current.length > MAX_PASSWORD_LENGTH || !(await verifyPassword(current, stored))) {
      return refused(ErrorCode.INVALID_CREDENTIALS, "The current password is not correct");
    }
    await this.#limiter.succeeded(account.email, limit.attemptIds);
    const hash = await hashPassword(next);
    const ended = await this.db.tx(async (q) => {
      await setPasswordHash(q, account.account_id, hash);
      return deleteAccountSessions(q, account.account_id, live.row.token_hash);
    });
    this.logger.info({ accountId: account.account_id, endedSessions: ended }, "password changed");
    return { ok: true };
  }

  /** Ends every session of an account (it was disabled). */
  async endAll(accountId: string): Promise<void> {
    await deleteAccountSessions(this.db, accountId, null);
  }

  async #live(token: string): Promise<{ ok: true; row: SessionWithAccount } | Refused> {
    const notSignedIn = refused(ErrorCode.NOT_SIGNED_IN, SESSION_REFUSALS.notSignedIn);
    if (!hasSessionTokenShape(token)) return notSignedIn;
    const hash = hashSessionToken(token);
    const row = await findSession(this.db, hash);
    // Found by primary-key equality; the constant-time check keeps the final answer
    // from depending on where two hashes first differ.
    if (!row || !sameKeyHash(row.token_hash, hash)) return notSignedIn;
    const nowMs = this.now();
    if (row.expires_at.getTime() <= nowMs || row.last_seen_at.getTime() + this.policy.idleMs <= nowMs) {
      await deleteSession(this.db, hash);
      return notSignedIn;
    }
    if (row.account.disabled) return refused(ErrorCode.ACCOUNT_DISABLED, SESSION_REFUSALS.disabled);
    if (nowMs - row.last_seen_at.getTime() >= TOUCH_INTERVAL_MS) await touchSession(this.db, hash, nowMs, TOUCH_INTERVAL_MS);
    return { ok: true, row };
  }

  async #sweep(nowMs: number): Promise<void> {
    if (nowMs - this.#lastSweep < SWEEP_INTERVAL_MS) return;
    this.#lastSweep = nowMs;
    await deleteExpiredSessions(this.db, nowMs, this.policy.idleMs);
  }
}
