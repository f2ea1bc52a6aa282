import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { sendSecret } from "./secret.ts";

export type { Client };

/** A Connect client calling another Orvado service over gRPC with the shared secret. */
export function internalClient<T extends DescService>(service: T, baseUrl: string, secret: string): Client<T> {
  const transport = createGrpcTransport({ baseUrl, interceptors: [sendSecret(secret)] });
  return createClient(service, transport);
}
