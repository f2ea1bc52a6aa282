import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { ErrorCode, type Refusal } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import { refusal } from "@orvado/core";
import { sendRefusal } from "../../reply.ts";

// How the console API says no: every refusal leaves in the error shape of docs/api.md#the-error-body
// through sendRefusal, whether it was thrown here, refused by a service, or a bad input.

/** A refusal thrown from a console handler; the scope's error handler answers it. */
export class ConsoleRefusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly retryAfterSeconds = 0,
  ) {
    super(message);
  }
}

export const refuse = (code: ErrorCode, message: string, retryAfterSeconds = 0) => new ConsoleRefusal(code, message, retryAfterSeconds);

export function fromRefusal(refusal: Refusal | undefined): ConsoleRefusal {
  if (!refusal) return refuse(ErrorCode.INTERNAL_ERROR, "A service gave no answer");
  return refuse(refusal.code, refusal.message, refusal.retryAfterSeconds);
}

/** Through the edge's one sendRefusal, so Retry-After and x-should-retry follow the same rule everywhere. */
export function sendConsoleRefusal(request: FastifyRequest, reply: FastifyReply, error: ConsoleRefusal) {
  const retryAfterSeconds = error.code === ErrorCode.TOO_MANY_ATTEMPTS ? Math.max(1, error.retryAfterSeconds) : error.retryAfterSeconds;
  return sendRefusal(request, reply, refusal(error.code, error.message, { retryAfterSeconds }) as Refusal);
}

/** What a service's RPC error means to a console user; null for errors that are our fault. */
function fromRpcError(error: ConnectError): ConsoleRefusal | null {
  switch (error.code) {
    case Code.InvalidArgument:
      return refuse(ErrorCode.INVALID_FIELD, error.rawMessage);
    case Code.NotFound:
      return refuse(ErrorCode.NOT_FOUND, error.rawMessage);
    case Code.AlreadyExists:
      return refuse(ErrorCode.ACCOUNT_EXISTS, error.rawMessage);
    case Code.FailedPrecondition:
      return refuse(ErrorCode.INVALID_REQUEST, error.rawMessage);
    default:
      return null;
  }
}

/**
 * The console scope's error handler. Anything it does not recognise is thrown on
 * to the app's handler, which answers framework errors (bad JSON, body size) and
 * internal errors in the same shape.
 */
export function consoleErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ConsoleRefusal) return sendConsoleRefusal(request, reply, error);
  if (error instanceof ConnectError) {
    const refusal = fromRpcError(error);
    if (refusal) return sendConsoleRefusal(request, reply, refusal);
  }
  throw error;
}

/** zod's first issue as the documented error: which field, and what is wrong with it. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, where: "body" | "query" = "body"): z.infer<S> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join(".");
  if (issue.code === "unrecognized_keys") {
    throw refuse(ErrorCode.UNKNOWN_FIELD, `Unknown ${where === "query" ? "parameter" : "field"} ${JSON.stringify(issue.keys[0])}`);
  }
  if (issue.code === "invalid_type" && issue.input === undefined && field !== "") {
    throw refuse(ErrorCode.MISSING_FIELD, `${field} is required`);
  }
  if (field === "") throw refuse(ErrorCode.INVALID_REQUEST, `The request ${where} must be a JSON object`);
  throw refuse(ErrorCode.INVALID_FIELD, `${field}: ${issue.message}`);
}
