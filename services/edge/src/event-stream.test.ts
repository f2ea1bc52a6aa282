import { connect, type Socket } from "node:net";
import { once } from "node:events";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { EventStream, HEARTBEAT } from "./event-stream.ts";

// The event stream's back-pressure, heartbeats and client departure, over real HTTP/1.1
// (a Fastify server on 127.0.0.1 and a raw TCP client that reads only when told).

const EVENTS = 64;
// Large events, so the kernel's socket buffers (megabytes on loopback) hold only a few.
const PAD = "x".repeat(1024 * 1024);
let app: FastifyInstance;

afterEach(async () => {
  await app?.close();
});

/** A server whose one route sends EVENTS large events, counting those send() let through. */
async function serve(heartbeatMs: number) {
  const seen = { sent: 0, left: false, ended: false };
  app = Fastify({ forceCloseConnections: true });
  app.get("/events", async (_request, reply) => {
    const stream = new EventStream(reply, heartbeatMs);
    stream.left.signal.addEventListener("abort", () => (seen.left = true));
    void (async () => {
      for (let index = 0; index < EVENTS && !stream.closed; index++) {
        await stream.send("test.event", { index, pad: PAD });
        seen.sent += 1;
      }
      stream.end();
      seen.ended = true;
    })();
    return reply;
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  return { port, seen };
}

async function request(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  socket.pause();
  socket.write("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  return socket;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("EventStream (HTTP/1.1)", () => {
  it("lets the sender run ahead of a client that does not read by a bounded amount only, then delivers everything", async () => {
    const { port, seen } = await serve(60_000);
    const socket = await request(port);
    await sleep(500);
    // The socket's and the stream's buffers hold a few events; the rest wait in the sender, unmade.
    expect(seen.sent).toBeLessThan(EVENTS / 3);
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    while (!seen.ended) await sleep(20);
    await sleep(100);
    socket.destroy();
    const text = Buffer.concat(chunks).toString("utf8");
    expect(seen.sent).toBe(EVENTS);
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(text).toContain("content-type: text/event-stream; charset=utf-8");
    expect(text.split("event: test.event\n").length - 1).toBe(EVENTS);
  });

  it("sends a keep-alive comment at once and every heartbeat, and tells the sender when the client leaves", async () => {
    app = Fastify({ forceCloseConnections: true });
    let left = false;
    app.get("/quiet", async (_request, reply) => {
      const stream = new EventStream(reply, 100);
      stream.left.signal.addEventListener("abort", () => (left = true));
      return reply;
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };
    const socket = connect(port, "127.0.0.1");
    await once(socket, "connect");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.write("GET /quiet HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await sleep(450);
    socket.destroy();
    expect(Buffer.concat(chunks).toString("utf8").split(HEARTBEAT).length - 1).toBeGreaterThanOrEqual(3);
    while (!left) await sleep(20);
    expect(left).toBe(true);
  });
});
