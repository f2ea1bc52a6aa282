import { createHash } from "node:crypto";
import { ErrorCode, type AuthService, type Refusal, type VerifiedKey } from "@orvado/proto";
import { refusal } from "@orvado/core";
import type { Client } from "@orvado/rpc";

export type KeyCheck = { ok: true; key: VerifiedKey } | { ok: false; refusal: Refusal };

/** "Bearer" then the token; HTTP drops trailing spaces, so "Bearer " arrives as "Bearer" and means no token. */
const BEARER = /^Bearer(?:[ \t]+(\S*))?[ \t]*$/i;

/**
 * Reads the bearer key and asks auth who it belongs to, remembering answers for
 * a moment (keyCacheMs) so a burst of requests costs one call; a revoked key
 * therefore stops working within that moment. Requests that find no answer while
 * auth is already being asked about the same key wait for that call instead of
 * making their own: at 100 connections on one key, every expiry of the answer
 * had sent dozens of calls (and key lookups in PostgreSQL) where one does.
 */
export class KeyChecker {
  readonly #cache = new Map<string, { check: KeyCheck; until: number }>();
  readonly #asking = new Map<string, Promise<KeyCheck>>();

  /**
   * `now` is the clock answers expire by (milliseconds); tests pass their own to expire an answer
   * without waiting. `onAuthFailed` hears why auth could not be asked (the requests get a 503).
   */
  constructor(
    private readonly auth: Client<typeof AuthService>,
    private readonly cacheMs: number,
    private readonly now: () => number = Date.now,
    private readonly onAuthFailed: (error: unknown) => void = () => {},
  ) {}

  async check(authorization: string | undefined): Promise<KeyCheck> {
    if (authorization === undefined || authorization.trim() === "") {
      return this.#refuse(ErrorCode.MISSING_API_KEY, "No token was provided: send your API key as Authorization: Bearer td-…");
    }
    const match = BEARER.exec(authorization);
    if (!match) return this.#refuse(ErrorCode.INVALID_API_KEY, "The Authorization header must be Bearer followed by your API key");
    if (!match[1]) return this.#refuse(ErrorCode.MISSING_API_KEY, "No token was provided after Bearer");
    const secret = match[1];
    const cacheKey = createHash("sha256").update(secret).digest("base64");
    const cached = this.#cache.get(cacheKey);
    if (cached && cached.until > this.now()) return cached.check;
    const asking = this.#asking.get(cacheKey);
    if (asking) return asking;
    const call = this.#ask(secret, cacheKey).finally(() => this.#asking.delete(cacheKey));
    this.#asking.set(cacheKey, call);
    return call;
  }

  async #ask(secret: string, cacheKey: string): Promise<KeyCheck> {
    let answer;
    try {
      answer = await this.auth.verifyKey({ secret });
    } catch (error) {
      // Auth is down or restarting: nothing has started, so the client may simply retry.
      this.onAuthFailed(error);
      return { ok: false, refusal: refusal(ErrorCode.SERVICE_UNAVAILABLE, "The key could not be checked just now; nothing was charged, retry in a few seconds", { retryAfterSeconds: 5, shouldRetry: true }) as Refusal };
    }
    const check: KeyCheck =
      answer.result.case === "key"
        ? { ok: true, key: answer.result.value }
        : { ok: false, refusal: answer.result.value ?? (refusal(ErrorCode.INVALID_API_KEY, "The API key is not valid") as Refusal) };
    this.#remember(cacheKey, check);
    return check;
  }

  #remember(cacheKey: string, check: KeyCheck) {
    if (this.cacheMs <= 0) return;
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(cacheKey, { check, until: this.now() + this.cacheMs });
  }

  #refuse(code: ErrorCode, message: string): KeyCheck {
    return { ok: false, refusal: refusal(code, message) as Refusal };
  }
}
