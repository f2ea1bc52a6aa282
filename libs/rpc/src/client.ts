import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { colocatedTransport } from "./in-process.ts";
import { HTTP2_SESSION_MEMORY_MB } from "./http2-settings.ts";
import { AttemptAwareSessionManager, replicaTransport } from "./replicas.ts";
import { sendSecret } from "./secret.ts";

export type { Client };

/** "http://a:1, http://b:1" or a list of URLs -> the replicas' URLs. */
export function replicaUrls(urls: string | readonly string[]): string[] {
  const list = typeof urls === "string" ? urls.split(",") : urls;
  return list.map((url) => url.trim()).filter(Boolean);
}

/**
 * How an internal client reaches the service:
 * - "colocated" (the default, what the services use): in-process while a server
 *   for the URL runs in this process (in-process.ts), over HTTP/2 otherwise;
 * - "http2": always over the network, even to a server in this process, so a
 *   test can exercise the wire (Connect over HTTP/2, the server's HTTP stack).
 */
export type InternalTransport = "colocated" | "http2";

export interface InternalClientOptions {
  transport?: InternalTransport;
}

/**
 * A Connect client calling another Orvado service with the shared secret;
 * in-process (in-process.ts: unary calls and server streams handed over directly) when that service runs
 * in this process unless options.transport is "http2". Given
 * several URLs (replicas of the service), it spreads calls across them and
 * moves a call that started nothing off a replica that refuses it (replicas.ts).
 *
 * Over the network it speaks the Connect protocol (binary protobuf over HTTP/2)
 * to the same servers, which also serve gRPC to everyone else (grpc.test.ts
 * calls them with @grpc/grpc-js). Why: Connect's gRPC handler runs every call,
 * unary included, through a pipe of async generators that stay suspended for as
 * long as the call is open, while its Connect-protocol unary handler reads the
 * one message and calls the method. A job's CreateImage call is open for the
 * whole generation (10-70 s), so in the soak generation's heap with its jobs
 * open and the four services' peak RSS both fell with the Connect protocol
 * (docs/design-choices.md#calls-between-services).
 */
export function internalClient<T extends DescService>(
  service: T,
  urls: string | readonly string[],
  secret: string,
  options: InternalClientOptions = {},
): Client<T> {
  const transport = options.transport ?? "colocated";
  const interceptors = [sendSecret(secret)];
  const transports = replicaUrls(urls).map((baseUrl) => {
    // No compression between services: the big messages are images (PNG does not
    // compress), and gzip/gunzip of every one cost a few % of CPU on the hot path.
    const network = createConnectTransport({
      baseUrl,
      httpVersion: "2",
      useBinaryFormat: true,
      acceptCompression: [],
      interceptors,
      sessionManager: new AttemptAwareSessionManager(baseUrl, undefined, { maxSessionMemory: HTTP2_SESSION_MEMORY_MB }),
    });
    return transport === "http2" ? network : colocatedTransport(baseUrl, network, interceptors);
  });
  return createClient(service, replicaTransport(transports));
}
