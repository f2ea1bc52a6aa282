import { microsToUsd } from "@orvado/core";
import type { Db } from "@orvado/db";
import { CostStatus, type BillingService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { storedImageLink } from "../storage/signed-links.ts";

// A delivery's body (docs/api.md#webhooks), made at each attempt from the job's rows and
// billing's cost record: its image links are signed then, with the images' own expiry.

export interface WebhookBody {
  type: string;
  timestamp: string;
  data: {
    id: string;
    status: "succeeded" | "failed";
    model: string;
    size: string;
    cost: string;
    images?: { url: string }[];
    error?: { code: string; message: string };
  };
}

interface JobRow {
  status: "running" | "succeeded" | "failed";
  model: string;
  size: string;
  error_code: string | null;
  error_message: string | null;
  finished_at: Date | null;
}

/** How long a body waits for billing to settle the request, so that `cost` is what was charged. */
export const SETTLEMENT_WAIT_MS = 60_000;

export interface BodyDeps {
  db: Db;
  billing: Client<typeof BillingService>;
  urlSigningSecret: string;
  /** The edge's public address, or "" for links as paths. */
  linkBase(): string;
}

/** The body, or "wait" while billing has not settled a request that finished moments ago. */
export async function webhookBody(deps: BodyDeps, requestId: string, accountId: string, eventType: string): Promise<WebhookBody | "wait"> {
  const { rows } = await deps.db.query<JobRow>(
    "SELECT status, model, size, error_code, error_message, finished_at FROM generation.jobs WHERE request_id = $1 AND account_id = $2",
    [requestId, accountId],
  );
  const job = rows[0];
  if (!job || job.status === "running") throw new Error(`job ${requestId} has no final outcome`);
  const finishedAt = job.finished_at ?? new Date();
  const { cost } = await deps.billing.getCost({ requestId, accountId }, { timeoutMs: 10_000 });
  const settled = cost !== undefined && cost.status !== CostStatus.PENDING && cost.status !== CostStatus.UNSPECIFIED;
  if (!settled && Date.now() - finishedAt.getTime() < SETTLEMENT_WAIT_MS) return "wait";
  const data: WebhookBody["data"] = {
    id: requestId,
    status: job.status,
    model: job.model,
    size: job.size,
    cost: microsToUsd(job.status === "failed" && !settled ? 0n : (cost?.amountMicros ?? 0n)),
  };
  if (job.status === "succeeded") data.images = await imageLinks(deps, requestId);
  else data.error = { code: job.error_code ?? "async_image_failed", message: job.error_message ?? "The job failed" };
  return { type: eventType, timestamp: finishedAt.toISOString(), data };
}

/** Links to the images still kept; an image past its expiry has none (its file is gone or going). */
async function imageLinks(deps: BodyDeps, requestId: string): Promise<{ url: string }[]> {
  const { rows } = await deps.db.query<{ image_id: string; content_type: string; expires_at: Date }>(
    `SELECT image_id, content_type, expires_at FROM generation.images
      WHERE request_id = $1 AND deleted_at IS NULL AND expires_at > now() ORDER BY position`,
    [requestId],
  );
  return rows.map((image) => ({
    url: deps.linkBase() + storedImageLink(image.image_id, image.expires_at, image.content_type, deps.urlSigningSecret),
  }));
}
