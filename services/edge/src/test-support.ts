import { connect, type AddressInfo, type Socket } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { createLogger } from "@orvado/core";
import { buildEdgeApp } from "./app.ts";
import { loadEdgeConfig } from "./config.ts";

// Raw-socket exchanges for the edge's tests of what Node's HTTP parser refuses: the test
// decides where each read ends.

/**
 * An edge app on a loopback port for the tests of the enclosing file or describe block: it listens
 * before them and closes after them. `env` adds to the settings every such edge has.
 */
export function edgeOnLoopback(env: Record<string, string> = {}) {
  const app = buildEdgeApp(loadEdgeConfig({ ORVADO_INTERNAL_SECRET: "s".repeat(32), ...env }), createLogger("test", "silent"));
  let port = 0;
  beforeAll(async () => {
    await app.listen({ host: "127.0.0.1", port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
  });
  return { app, connect: (): Socket => connect(port, "127.0.0.1") };
}

/** Writes each part after the previous one has had time to be read on its own; resolves with all the connection received. */
export function exchange(socket: Socket, parts: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    void (async () => {
      for (const part of parts) {
        socket.write(part);
        await new Promise((wait) => setTimeout(wait, 50));
      }
    })();
  });
}

export function headAndBody(answer: string): { head: string; body: string } {
  const end = answer.indexOf("\r\n\r\n");
  return { head: answer.slice(0, end), body: answer.slice(end + 4) };
}

/** The status of each answer the connection received, in order. */
export function statusesOf(received: string): number[] {
  return [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
}
