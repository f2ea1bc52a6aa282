import type http2 from "node:http2";
import type { Http2SessionManager } from "@connectrpc/connect-node";
import { afterEach } from "vitest";
import type { RpcServer } from "./server.ts";

/**
 * What a test file's tests open over HTTP/2 (RPC servers, client sessions, bare
 * node:http2 servers), closed after each test: push onto the lists as they are made.
 */
export function closedAfterEachTest() {
  const opened = { servers: [] as RpcServer[], sessions: [] as Http2SessionManager[], bare: [] as http2.Http2Server[] };
  afterEach(async () => {
    for (const session of opened.sessions.splice(0)) session.abort();
    for (const server of opened.servers.splice(0)) await server.close();
    for (const server of opened.bare.splice(0)) await new Promise((resolve) => server.close(resolve));
  });
  return opened;
}
