import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, type Refusal } from "@orvado/proto";
import { errorBody, httpStatusFor, newRequestId } from "@orvado/core";
import { answerInProgress, noteExchange, requestInItsBody } from "./exchanges.ts";
import { refusedRequestWasHead, type ParserError } from "./refused-head.ts";
import { hostHeaderProblem } from "./host-header.ts";

/**
 * Every error leaves through here: the body of docs/api.md#the-error-body with the status of its code.
 * `requestId` is this request's own id, except for an idempotent retry, which answers as its original.
 */
export function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string, requestId = request.id) {
  // Set here too: Fastify's early refusals (frameworkErrors) skip the onRequest hook that sets them.
  reply.header("x-gateway-request-id", requestId).header("x-request-id", requestId);
  return reply.code(httpStatusFor(code)).send(errorBody(code, message, requestId));
}

/** URLs Fastify's router refuses before any hook runs (bad percent-encoding, over-long path parameters). */
export function sendRoutingError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH") return sendError(request, reply, ErrorCode.NOT_FOUND, "No such resource: a path segment is too long");
  if (error.code === "FST_ERR_BAD_URL") return sendError(request, reply, ErrorCode.INVALID_REQUEST, "The URL is not valid: it has a malformed percent-encoding");
  return sendError(request, reply, ErrorCode.INVALID_REQUEST, "The request could not be routed");
}

/**
 * Requests Node's HTTP parser rejects before Fastify ever sees them (malformed
 * HTTP, headers over the size limit, too slow to arrive): the same error shape,
 * with a request id of their own, then the connection is closed as Node does.
 * A request has one answer: one already answered (a 415 sent before its body
 * arrived, a URL Fastify's router refused, Node's 417 for an Expect header)
 * whose body then stalls or breaks is not answered again, only closed; nor is
 * anything written into an answer still under way.
 */
export function sendClientError(error: NodeJS.ErrnoException, socket: Socket) {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const requestId = newRequestId();
  const [status, code, message] = clientErrorAnswer(error.code);
  const inBody = requestInItsBody(socket);
  // An answer to HEAD has no body (the client would read one as garbage).
  const head = refusedRequestWasHead(error as ParserError, inBody?.request);
  const body = head ? "" : JSON.stringify(errorBody(code, message, requestId));
  if (socket.writable && !answerInProgress(socket) && !inBody?.response.headersSent) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n${head ? "" : `Content-Length: ${Buffer.byteLength(body)}\r\n`}` +
        `X-Gateway-Request-Id: ${requestId}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** The status, code and message for a refusal by Node's parser; the statuses are the ones Node's own fallback answers with. */
function clientErrorAnswer(parserCode: string | undefined): [number, ErrorCode, string] {
  switch (parserCode) {
    case "HPE_HEADER_OVERFLOW":
      return [431, ErrorCode.INVALID_REQUEST, "The request line and headers are larger than this server accepts"];
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return [413, ErrorCode.BODY_TOO_LARGE, "The request body's chunk extensions are larger than this server accepts"];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, ErrorCode.INVALID_REQUEST, "The request took too long to arrive"];
    default:
      return [400, ErrorCode.INVALID_REQUEST, "The request is not valid HTTP"];
  }
}

/**
 * An HTTP/1.1 request whose Expect header does not ask for 100-continue, an empty one included
 * (Node's checkExpectation event, which Node would otherwise answer with a bare 417): 417 in the
 * error shape, or the Host header's 400 first. Its body is not read; Node discards it once the
 * answer is sent, and the answer is the request's only one (sendClientError).
 */
export function sendExpectationFailed(request: IncomingMessage, response: ServerResponse) {
  noteExchange(request, response);
  const hostProblem = hostHeaderProblem(request);
  if (hostProblem) return sendBeforeRouting(request, response, 400, hostProblem);
  sendBeforeRouting(request, response, 417, "The Expect header asks for something this server does not do: only 100-continue is supported");
}

/**
 * A request that asks to be told to send its body (Expect: 100-continue; Node's checkContinue
 * event): a Host header the edge refuses gets its 400 before the client uploads anything; any
 * other is told to continue and handed to Fastify, as Node does when nothing listens.
 */
export function continueOrRefuse(server: Server, request: IncomingMessage, response: ServerResponse) {
  noteExchange(request, response);
  const hostProblem = hostHeaderProblem(request);
  if (hostProblem) return sendBeforeRouting(request, response, 400, hostProblem);
  response.writeContinue();
  server.emit("request", request, response);
}

/** An error in the error shape (code invalid_request) for a request refused before Fastify routes it. */
function sendBeforeRouting(request: IncomingMessage, response: ServerResponse, status: number, message: string) {
  const requestId = newRequestId();
  const body = JSON.stringify(errorBody(ErrorCode.INVALID_REQUEST, message, requestId));
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "x-gateway-request-id": requestId,
    "x-request-id": requestId,
  });
  response.end(request.method === "HEAD" ? undefined : body);
}

/** A refusal from a service, with the retry hints SDKs read. */
export function sendRefusal(request: FastifyRequest, reply: FastifyReply, refusal: Refusal, requestId = request.id) {
  if (refusal.code === ErrorCode.NO_CAPACITY || refusal.retryAfterSeconds > 0) reply.header("retry-after", String(refusal.retryAfterSeconds || 60));
  if (httpStatusFor(refusal.code) >= 500) reply.header("x-should-retry", String(refusal.shouldRetry));
  return sendError(request, reply, refusal.code, refusal.message, requestId);
}
