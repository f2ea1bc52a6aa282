import { lookup as dnsLookup } from "node:dns";
import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { Logger } from "@orvado/core";
import type { Db } from "@orvado/db";
import type { BillingService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { fetchWithLookup, pinnedFetch, type PinnedInit } from "../providers/pinned-fetch.ts";
import type { WebhookConfig } from "./config.ts";
import { webhookBody } from "./payload.ts";
import { retryDelayMs } from "./schedule.ts";
import type { WebhookAttemptResult } from "../metrics.ts";

// The sender: claims due deliveries from PostgreSQL and sends them, off every request's
// path. A claim is a lease (the row's next_attempt_at moves to the claim's expiry, taken
// with FOR UPDATE SKIP LOCKED), so replicas share the work and a killed sender's deliveries
// become due again when its claims expire: at least once, every attempt with the delivery's
// id as its webhook-id. At most WEBHOOK_CONCURRENCY attempts run at once per process.

interface Claimed {
  delivery_id: string;
  account_id: string;
  request_id: string;
  event_type: string;
  failed_attempts: number;
  url: string;
  secret: string;
  /** This claim's own id: only it may record the attempt's outcome. */
  claim: string;
}

export interface SenderDeps {
  db: Db;
  billing: Client<typeof BillingService>;
  config: WebhookConfig;
  urlSigningSecret: string;
  logger: Logger;
  /** Hears each attempt's result (the metrics). */
  onAttempt?: (result: WebhookAttemptResult) => void;
}

export interface WebhookSender {
  /** The base of image links when ORVADO_PUBLIC_URL is unset (the stack gives its edge's address). */
  setLinkBase(base: string): void;
  /** Stops claiming and waits for the attempts in flight. */
  stop(): Promise<void>;
}

/** How long a delivery waiting for billing's settlement waits before it is claimed again. */
const SETTLEMENT_RECHECK_MS = 1000;
/** A receiver's answer is not used; reading more of it than this is refused. */
const MAX_ANSWER_BYTES = 64 * 1024;
const MAX_ERROR_TEXT = 500;

export function startWebhookSender(deps: SenderDeps): WebhookSender {
  const { db, config, logger } = deps;
  let linkBase = config.publicUrl ?? "";
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let claiming: Promise<void> | null = null;
  let timer: NodeJS.Timeout | undefined;
  const bodyDeps = { db, billing: deps.billing, urlSigningSecret: deps.urlSigningSecret, linkBase: () => linkBase };

  async function claimAndSend(): Promise<void> {
    const free = config.concurrency - inFlight.size;
    if (free <= 0) return;
    const claimed = await claimDue(db, free, config.claimLeaseMs);
    for (const delivery of claimed) {
      const sending: Promise<void> = send(delivery)
        .catch((error) => logger.error({ err: error, deliveryId: delivery.delivery_id }, "webhook delivery failed to run"))
        .finally(() => {
          inFlight.delete(sending);
          // A free place: another due delivery may be waiting for it.
          if (!stopped) tick();
        });
      inFlight.add(sending);
    }
  }

  function tick(): void {
    if (claiming || stopped) return;
    claiming = claimAndSend()
      .catch((error) => logger.warn({ err: error }, "claiming webhook deliveries failed; trying again"))
      .finally(() => {
        claiming = null;
      });
  }

  async function send(delivery: Claimed): Promise<void> {
    const body = await webhookBody(bodyDeps, delivery.request_id, delivery.account_id, delivery.event_type);
    if (body === "wait") return release(db, delivery, SETTLEMENT_RECHECK_MS);
    const attempt = await attemptDelivery(delivery, JSON.stringify(body), config);
    deps.onAttempt?.(await recordAttempt(db, delivery, attempt, config.firstRetryMs));
    logger.info({ deliveryId: delivery.delivery_id, requestId: delivery.request_id, status: attempt.statusCode, error: attempt.error }, "webhook attempt");
  }

  timer = setInterval(tick, config.pollMs);
  tick();
  return {
    setLinkBase(base) {
      if (config.publicUrl === undefined) linkBase = base.replace(/\/+$/, "");
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await claiming;
      await Promise.all(inFlight);
    },
  };
}

const CLAIM_DUE = `
  WITH due AS (
    SELECT delivery_id FROM generation.webhook_deliveries
     WHERE status = 'pending' AND next_attempt_at <= now()
     ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE generation.webhook_deliveries d
       SET next_attempt_at = now() + $2 * interval '1 millisecond', claim = $3
      FROM due WHERE d.delivery_id = due.delivery_id
    RETURNING d.delivery_id, d.endpoint_id, d.account_id, d.request_id, d.event_type, d.failed_attempts, d.claim
  )
  SELECT c.*, e.url, e.secret FROM claimed c JOIN generation.webhook_endpoints e ON e.endpoint_id = c.endpoint_id`;

/** Takes up to `limit` due deliveries for `leaseMs`. Not waited to disk: a lost claim only lets the delivery be sent sooner. */
async function claimDue(db: Db, limit: number, leaseMs: number): Promise<Claimed[]> {
  const { rows } = await db.query<Claimed>(CLAIM_DUE, [limit, leaseMs, randomUUID()], { durable: false });
  return rows;
}

/** Gives a claimed delivery back, due again after `afterMs`, without counting an attempt. */
async function release(db: Db, delivery: Claimed, afterMs: number): Promise<void> {
  await db.query(
    `UPDATE generation.webhook_deliveries SET next_attempt_at = now() + $3 * interval '1 millisecond', claim = NULL
      WHERE delivery_id = $1 AND claim = $2`,
    [delivery.delivery_id, delivery.claim, afterMs],
    { durable: false },
  );
}

export interface Attempt {
  startedAt: Date;
  durationMs: number;
  /** Null when no answer came. */
  statusCode: number | null;
  /** Null for a 2xx answer. */
  error: string | null;
}

/** One signed POST; a 2xx answer within the time limit is a success, anything else a failure. */
async function attemptDelivery(delivery: Claimed, body: string, config: WebhookConfig): Promise<Attempt> {
  const startedAt = new Date();
  const signature = new Webhook(delivery.secret).sign(delivery.delivery_id, startedAt, body);
  const init: PinnedInit = {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": "Orvado-Webhooks/1",
      "webhook-id": delivery.delivery_id,
      "webhook-timestamp": String(Math.floor(startedAt.getTime() / 1000)),
      "webhook-signature": signature,
    },
    body,
    signal: AbortSignal.timeout(config.attemptTimeoutMs),
    maxBytes: MAX_ANSWER_BYTES,
  };
  const url = new URL(delivery.url);
  const finish = (statusCode: number | null, error: string | null): Attempt => ({ startedAt, durationMs: Date.now() - startedAt.getTime(), statusCode, error });
  try {
    // The address is checked where the connection is made (pinned-fetch.ts), so DNS rebinding cannot reach a private one.
    const answer = config.allowPrivateUrls ? await fetchWithLookup(url, init, dnsLookup as never) : await pinnedFetch(url, init);
    const ok = answer.status >= 200 && answer.status < 300;
    return finish(answer.status, ok ? null : `the endpoint answered ${answer.status}`);
  } catch (error) {
    const timedOut = (error as Error).name === "TimeoutError" || (error as Error).name === "AbortError";
    return finish(null, timedOut ? `no answer within ${config.attemptTimeoutMs} ms` : String((error as Error).message).slice(0, MAX_ERROR_TEXT));
  }
}

/**
 * The attempt's log row, and the delivery's next state if this claim still holds it
 * (a redeliver meanwhile took it over): succeeded, due again on the schedule, or failed.
 */
async function recordAttempt(db: Db, delivery: Claimed, attempt: Attempt, firstRetryMs: number): Promise<WebhookAttemptResult> {
  const failures = delivery.failed_attempts + 1;
  const delay = attempt.error === null ? null : retryDelayMs(failures, firstRetryMs);
  const status = attempt.error === null ? "succeeded" : delay === null ? "failed" : "pending";
  await db.tx(async (q) => {
    // The endpoint may have been deleted (with its deliveries) while the attempt ran: then nothing is recorded.
    await q.query(
      `INSERT INTO generation.webhook_attempts (delivery_id, started_at, duration_ms, status_code, error)
         SELECT delivery_id, $2, $3, $4, $5 FROM generation.webhook_deliveries WHERE delivery_id = $1 FOR SHARE`,
      [delivery.delivery_id, attempt.startedAt, attempt.durationMs, attempt.statusCode, attempt.error],
    );
    await q.query(
      `UPDATE generation.webhook_deliveries
          SET status = $3, claim = NULL,
              failed_attempts = failed_attempts + CASE WHEN $3 = 'succeeded' THEN 0 ELSE 1 END,
              next_attempt_at = now() + coalesce($4::int, 0) * interval '1 millisecond'
        WHERE delivery_id = $1 AND claim = $2`,
      [delivery.delivery_id, delivery.claim, status, delay],
    );
  });
  return status === "succeeded" ? "delivered" : status === "pending" ? "retrying" : "failed";
}
