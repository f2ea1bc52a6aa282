import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

// What the edge knows of each connection's requests and answers, from its HTTP server's public
// events ('request', 'checkContinue', 'checkExpectation'): sendClientError reads it when Node's
// parser refuses a request, to tell whether an answer is already on the wire and whether the
// refusal is that of a request it has already answered.

interface Exchanges {
  /** The request whose head the parser read last: while incomplete, the parser is in its body. */
  latest?: { request: IncomingMessage; response: ServerResponse };
  /** Responses not yet flushed whole (several, when requests are pipelined). */
  unfinished: ServerResponse[];
}

const bySocket = new WeakMap<Socket, Exchanges>();

/** From now on every request `server` hands on is noted with its response. */
export function trackExchanges(server: Server): void {
  server.on("request", noteExchange);
}

/** Notes a request and its response (handlers of checkContinue and checkExpectation call it too). */
export function noteExchange(request: IncomingMessage, response: ServerResponse): void {
  const socket = request.socket;
  const exchanges = bySocket.get(socket) ?? { unfinished: [] };
  exchanges.latest = { request, response };
  exchanges.unfinished = exchanges.unfinished.filter((earlier) => earlier !== response && !earlier.writableFinished);
  exchanges.unfinished.push(response);
  bySocket.set(socket, exchanges);
}

/** The request whose body the connection's parser is reading (its head read whole), if any: a refusal now is that request's. */
export function requestInItsBody(socket: Socket): { request: IncomingMessage; response: ServerResponse } | undefined {
  const latest = bySocket.get(socket)?.latest;
  return latest && !latest.request.complete ? latest : undefined;
}

/**
 * Whether an answer on this connection has begun and is not yet flushed whole (a route may answer
 * before a slow body has arrived): another answer written now would corrupt it. Node's own
 * clientError fallback makes the same check.
 */
export function answerInProgress(socket: Socket): boolean {
  return bySocket.get(socket)?.unfinished.some((response) => response.headersSent && !response.writableFinished) ?? false;
}
