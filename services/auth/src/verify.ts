import type { Db } from "@orvado/db";
import { refusal, type Logger } from "@orvado/core";
import { ErrorCode, type VerifyKeyResponseSchema } from "@orvado/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { hasKeyShape, hashKeySecret, sameKeyHash } from "./keys.ts";
import { findKeyByHash, touchKey } from "./store.ts";
import { accountLimitsMessage } from "./messages.ts";

type VerifyResult = MessageInitShape<typeof VerifyKeyResponseSchema>;

export const REFUSALS = {
  missing: "No API key was provided: send Authorization: Bearer td-…",
  malformed: "The API key is malformed",
  unknown: "The API key is not recognised",
  revoked: "The API key has been revoked",
  expired: "The API key has expired",
  disabled: "The account is disabled",
} as const;

const refuse = (code: ErrorCode, message: string): VerifyResult => ({
  result: { case: "refusal", value: refusal(code, message) },
});

export interface KeyVerifierOptions {
  /** last_used_at is written at most this often per key, so verifying is not a write per request. */
  touchIntervalMs?: number;
  now?: () => number;
}

/** Answers VerifyKey: who a bearer secret belongs to, or a refusal value saying why not. */
export class KeyVerifier {
  readonly #touchIntervalMs: number;
  readonly #now: () => number;
  /** key_id → when this process last wrote last_used_at. */
  readonly #touched = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    options: KeyVerifierOptions = {},
  ) {
    this.#touchIntervalMs = options.touchIntervalMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  async verify(secret: string): Promise<VerifyResult> {
    if (secret === "") return refuse(ErrorCode.MISSING_API_KEY, REFUSALS.missing);
    if (!hasKeyShape(secret)) return refuse(ErrorCode.INVALID_API_KEY, REFUSALS.malformed);
    const hash = hashKeySecret(secret);
    const key = await findKeyByHash(this.db, hash);
    // The index found the row by equality; the constant-time check keeps the final
    // yes/no from depending on where two hashes first differ.
    if (!key || !sameKeyHash(key.secret_hash, hash)) return refuse(ErrorCode.INVALID_API_KEY, REFUSALS.unknown);
    if (key.revoked_at !== null) return refuse(ErrorCode.INVALID_API_KEY, REFUSALS.revoked);
    const now = this.#now();
    if (key.expires_at !== null && key.expires_at.getTime() <= now) {
      return refuse(ErrorCode.INVALID_API_KEY, REFUSALS.expired);
    }
    if (key.account_disabled) return refuse(ErrorCode.INVALID_API_KEY, REFUSALS.disabled);
    await this.#touch(key.key_id, now);
    return {
      result: {
        case: "key",
        value: {
          keyId: key.key_id,
          accountId: key.account_id,
          ...(key.limit_micros !== null && { limitMicros: key.limit_micros }),
          models: key.models,
          ...(key.requests_per_minute !== null && { requestsPerMinute: key.requests_per_minute }),
          accountLimits: accountLimitsMessage({ max_concurrent_jobs: key.account_max_concurrent_jobs, requests_per_minute: key.account_requests_per_minute }),
        },
      },
    };
  }

  async #touch(keyId: string, now: number): Promise<void> {
    const last = this.#touched.get(keyId);
    if (last !== undefined && now - last < this.#touchIntervalMs) return;
    this.#touched.set(keyId, now);
    if (this.#touched.size > 100_000) this.#forgetStale(now);
    try {
      await touchKey(this.db, keyId, this.#touchIntervalMs);
    } catch (error) {
      // A usage timestamp is bookkeeping: failing to write it must not refuse a valid key.
      this.logger.warn({ err: error, keyId }, "could not record key use");
    }
  }

  /** Entries older than the interval decide nothing, so dropping them keeps the map bounded. */
  #forgetStale(now: number): void {
    for (const [keyId, at] of this.#touched) {
      if (now - at >= this.#touchIntervalMs) this.#touched.delete(keyId);
    }
  }
}
