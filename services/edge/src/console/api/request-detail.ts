import type { FastifyRequest } from "fastify";
import { ErrorCode, type GetJobResponse } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { answerItem } from "../../images-answer.ts";
import type { ConsoleApiDeps } from "./deps.ts";
import { refuse } from "./errors.ts";
import { iso, usageRow } from "./format.ts";
import { ownCost } from "./own-cost.ts";
import { publicBase } from "../../host-header.ts";

// One request as the console's detail view shows it: the cost record (billing)
// beside the job (generation): its channel, how long it ran, how it failed, and
// its images while their links live. Both are looked up within one account.

async function ownJob(generation: ConsoleApiDeps["generation"], accountId: string, requestId: string): Promise<GetJobResponse | null> {
  try {
    return await generation.getJob({ requestId, accountId });
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound) return null;
    throw error;
  }
}

function jobJson(job: GetJobResponse, base: string, operator: boolean) {
  const detail = job.detail;
  const created = detail ? Number(detail.createdAtUnixMs) : null;
  const finished = detail?.finishedAtUnixMs === undefined ? null : Number(detail.finishedAtUnixMs);
  const state = job.state;
  return {
    channel: detail?.channel ?? null,
    status: detail?.status ?? null,
    quality: detail?.quality || null,
    startedAt: iso(detail?.createdAtUnixMs),
    finishedAt: iso(detail?.finishedAtUnixMs),
    latencyMs: created !== null && finished !== null ? finished - created : null,
    imageBytes: detail ? Number(detail.imageBytes) : 0,
    error: detail?.errorCode ? { code: detail.errorCode, message: detail.errorMessage } : null,
    // The upstream's own words (a blocked URL, an HTTP status and message): the operator's view only.
    ...(operator ? { failureDetail: detail?.failureDetail || null } : {}),
    images: state.case === "images" ? state.value.data.map((image) => ({ ...answerItem(image, base), width: image.width, height: image.height })) : [],
    // Why there are no images to show: expired links, a failure, or still running.
    imagesNote: state.case === "failure" ? state.value.message : state.case === "running" ? "The job is still running" : null,
  };
}

/**
 * The detail of one of the account's requests; 404 for an id this account does not own. The
 * operator's view (the admin's account pages) adds the upstream's cause of a failure.
 */
export async function requestDetail(
  request: FastifyRequest,
  deps: ConsoleApiDeps,
  accountId: string,
  requestId: string,
  keyNames: ReadonlyMap<string, string>,
  view: { operator: boolean } = { operator: false },
) {
  // Billing first: it checks the id's shape and the owner before generation is asked anything.
  const cost = await ownCost(deps.billing, accountId, requestId);
  if (!cost) throw refuse(ErrorCode.NOT_FOUND, `No request ${JSON.stringify(requestId.slice(0, 64))} in this account`);
  const job = await ownJob(deps.generation, accountId, requestId);
  const base = publicBase(request, deps.publicUrl);
  return { ...usageRow(cost, keyNames), job: job ? jobJson(job, base, view.operator) : null };
}
