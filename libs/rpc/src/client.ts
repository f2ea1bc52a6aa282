import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { colocatedTransport } from "./in-process.ts";
import { sendSecret } from "./secret.ts";

export type { Client };

/**
 * A Connect client calling another Orvado service over gRPC with the shared
 * secret; in-process when that service runs in this process (in-process.ts).
 */
export function internalClient<T extends DescService>(service: T, baseUrl: string, secret: string): Client<T> {
  const interceptors = [sendSecret(secret)];
  // No compression between services: the big messages are images (PNG does not
  // compress), and gzip/gunzip of every one cost a few % of CPU on the hot path.
  const network = createGrpcTransport({ baseUrl, interceptors, acceptCompression: [] });
  return createClient(service, colocatedTransport(baseUrl, network, interceptors));
}
