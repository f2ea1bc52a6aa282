import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, request, type ClientRequest } from "node:http";
import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestStack, type TestStack } from "./harness.ts";

// Keep-alive that outlasts a load balancer's idle timeout (issue 56 item 4): with the default
// settings, a client (or balancer) that reuses a pooled connection after 30 s of quiet gets its
// answer on that same connection, instead of "other side closed" from a socket the edge shut.
// Over real HTTP/1.1 with Node's http.Agent (keep-alive, one socket) against the stack's edge.

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

/** GET on the agent's one socket: the status, the Keep-Alive hint, and the socket it went on. */
function get(agent: Agent, path: string): Promise<{ status: number; keepAlive: string; socket: Socket }> {
  const url = new URL(path, stack.edgeUrl);
  return new Promise((resolve, reject) => {
    const sent: ClientRequest = request(url, { agent }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode!, keepAlive: String(response.headers["keep-alive"]), socket: sent.socket! }));
    });
    sent.on("error", reject);
    sent.end();
  });
}

describe("an idle keep-alive connection (the default EDGE_KEEP_ALIVE_TIMEOUT_MS, over HTTP/1.1)", () => {
  it("is still open after 30 s of quiet: the next request goes on the same socket and is answered", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(agent, "/v1/models");
      expect(first.status).toBe(200);
      // What the edge advertises, and what Node's own client trusts to drop a socket early.
      expect(first.keepAlive).toBe("timeout=72");
      await sleep(30_000);
      const second = await get(agent, "/v1/models");
      expect(second.status).toBe(200);
      expect(second.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  }, 90_000);
});
