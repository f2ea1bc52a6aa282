import type { ServerOptions } from "node:http";
import type { EdgeConfig } from "./config.ts";

// How long a client may take to send a request, and to sit idle between requests,
// for the edge's HTTP server. Node's requestTimeout counts from a request's first
// byte until its body has arrived (its parser stops watching a request once the
// message is complete), so it never cuts a response, however long a job runs;
// headersTimeout may not exceed it (Node refuses to create such a server). A
// connection past either bound gets 408 in the error shape of
// docs/api.md#the-error-body (reply.ts, sendClientError) and is closed. Fastify's own
// defaults turn requestTimeout off, which let a stalled or trickled body hold a
// socket for ever.
//
// Neither bound counts while a keep-alive connection waits for its next request:
// that wait is keepAliveTimeout's alone, so it may be longer than both (it must
// outlast a load balancer's idle timeout, config.ts). Node keeps the socket a little
// past the `Keep-Alive: timeout=` it advertises (keepAliveTimeoutBuffer, left at its
// default), so a client that trusts the hint never sends into a closing socket.

/** Node looks for late requests this often; a bound is enforced within one interval of it. */
export function lateRequestCheckIntervalMs(requestTimeoutMs: number): number {
  return Math.max(25, Math.min(1_000, Math.floor(requestTimeoutMs / 10)));
}

/** The Fastify options that bound how long a request, and an idle keep-alive, may take. */
export function serverTimeBounds(config: Pick<EdgeConfig, "requestTimeoutMs" | "keepAliveTimeoutMs">) {
  const http: ServerOptions = {
    headersTimeout: config.requestTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionsCheckingInterval: lateRequestCheckIntervalMs(config.requestTimeoutMs),
  };
  // Fastify sets these two on the server itself after creating it (0 would mean "Node's default").
  return { http, requestTimeout: config.requestTimeoutMs, keepAliveTimeout: config.keepAliveTimeoutMs };
}
