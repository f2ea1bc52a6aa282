import type { FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { sendError } from "./reply.ts";

// The call that runs a job. If it breaks (generation restarted, the connection
// cut), the job may still have finished and been charged, so the answer must not
// invite a blind retry (the retry rule, docs/api.md#retrying): 502 job_outcome_unknown with
// x-should-retry: false, pointing at a lookup that tells what happened. That is
// said only when a job may really exist: a call that never reached generation,
// or that generation refused before its handler ran, says so instead.

const NOT_CONNECTED = /\b(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b/;

/**
 * Codes with which generation refuses a call before its handler runs (a message
 * it cannot decode, a missing shared secret, an unknown method). Its handler
 * answers every refusal of its own as a message, never as one of these.
 */
const REFUSED_BEFORE_HANDLER = new Set([Code.InvalidArgument, Code.Unauthenticated, Code.PermissionDenied, Code.Unimplemented]);

/** True when the call failed before a connection to generation existed (so before any job could start). */
function neverReached(error: unknown): boolean {
  if (!(error instanceof ConnectError) || error.code !== Code.Unavailable) return false;
  const text = `${error.message} ${String((error.cause as { code?: string } | undefined)?.code ?? "")}`;
  return NOT_CONNECTED.test(text);
}

const refusedBeforeHandler = (error: unknown) => error instanceof ConnectError && REFUSED_BEFORE_HANDLER.has(error.code);

/**
 * `lookup` names where the client can read the outcome (the request lookup, or the console's usage).
 * Not an async function: the call is held open for the job's whole duration, and a
 * suspended async function would keep its frame (and `call`'s closure) for as long
 * (docs/performance.md#where-the-memory-goes); the catch handler keeps only what an answer needs.
 */
export function jobOutcomeOrUnknown<T>(request: FastifyRequest, reply: FastifyReply, lookup: string, call: () => Promise<T>): Promise<T | null> {
  let pending: Promise<T>;
  try {
    pending = call();
  } catch (error) {
    pending = Promise.reject(error);
  }
  return pending.catch((error: unknown) => answerLostCall(request, reply, lookup, error));
}

/** What a call to the job that broke means for its caller: the answer's code and text, and how to log it. */
export interface LostCall {
  code: ErrorCode;
  message: string;
  /** A retry is safe only when no job can exist (the call never left). */
  retrySafe: boolean;
  level: "warn" | "error";
  log: string;
}

export function lostCall(error: unknown, lookup: string): LostCall {
  if (neverReached(error)) {
    // The connection was refused: the call never left, so no job exists and a retry is safe.
    const message = "The generation service is briefly unavailable; nothing was charged, retry in a few seconds";
    return { code: ErrorCode.SERVICE_UNAVAILABLE, message, retrySafe: true, level: "warn", log: "generation unreachable; no job started" };
  }
  if (refusedBeforeHandler(error)) {
    // Our own fault (the edge should have refused the input): no job, nothing charged.
    const message = "The request could not be passed to the generation service; no job was started and nothing was charged";
    return { code: ErrorCode.INTERNAL_ERROR, message, retrySafe: false, level: "error", log: "generation refused the call before running it" };
  }
  const message = `The connection to the job was lost while it ran; it may still finish and be charged. Do not retry blindly: ${lookup} tells its outcome`;
  return { code: ErrorCode.JOB_OUTCOME_UNKNOWN, message, retrySafe: false, level: "warn", log: "lost the connection to the job" };
}

async function answerLostCall(request: FastifyRequest, reply: FastifyReply, lookup: string, error: unknown): Promise<null> {
  const lost = lostCall(error, lookup);
  request.log[lost.level]({ err: error }, lost.log);
  if (lost.retrySafe) reply.header("retry-after", "5").header("x-should-retry", "true");
  else if (lost.code === ErrorCode.JOB_OUTCOME_UNKNOWN) reply.header("x-should-retry", "false");
  await sendError(request, reply, lost.code, lost.message);
  return null;
}
