import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { GenerationService } from "@orvado/proto";
import { internalClient, type InternalTransport } from "./client.ts";
import type { RpcServer } from "./server.ts";
import { startGenerationStandIn, TEST_SECRET as SECRET, type SeenStream } from "./test-support.ts";

// Server-streaming calls on both paths an internal client takes: "colocated" in
// process (direct-stream.ts: a copy of each message, no encoding), "http2" through
// Connect's Node client and adapter over loopback HTTP/2. The same rules hold on both.

const servers: RpcServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function readAll<T>(messages: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const message of messages) all.push(message);
  return all;
}

describe.each<{ transport: InternalTransport; host: (server: RpcServer) => string }>([
  { transport: "colocated", host: () => "in-memory" },
  { transport: "http2", host: (server) => new URL(server.url).host },
])("server streams over the $transport transport", ({ transport, host }) => {
  const seen: SeenStream = {};
  async function generation(options: { readMaxBytes?: number } = {}) {
    const server = await startGenerationStandIn(seen, options);
    servers.push(server);
    return internalClient(GenerationService, server.url, SECRET, { transport });
  }

  it("deliver every message in order, each the caller's own copy, with the shared secret checked", async () => {
    const server = await startGenerationStandIn(seen);
    servers.push(server);
    const client = internalClient(GenerationService, server.url, SECRET, { transport });
    const [head, ...chunks] = await readAll(client.readImage({ imageId: "count-5" }));
    expect(head!.contentType).toBe(`secret-seen@${host(server)}`);
    expect(chunks.map((message) => [message.chunk.length, message.chunk[0], message.chunk[1023]])).toEqual([0, 1, 2, 3, 4].map((index) => [1024, index, index]));
    await expect.poll(() => seen.closed).toBe(true);
  });

  it("refuse a caller without the shared secret", async () => {
    const server = await startGenerationStandIn(seen);
    servers.push(server);
    const intruder = internalClient(GenerationService, server.url, "x".repeat(32), { transport });
    await expect(readAll(intruder.readImage({ imageId: "count-1" }))).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("pass on an error before the first message and one mid-stream as received", async () => {
    const client = await generation();
    const missing = await readAll(client.readImage({ imageId: "missing" })).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ConnectError);
    expect(missing).toMatchObject({ code: Code.NotFound, rawMessage: "no such image" });
    expect((missing as ConnectError).metadata.get("x-reason")).toBe("unknown");
    const received: unknown[] = [];
    const midway = await (async () => {
      for await (const message of client.readImage({ imageId: "midway" })) received.push(message);
    })().catch((error: unknown) => error);
    expect(received).toHaveLength(1);
    expect(midway).toMatchObject({ code: Code.Unavailable, rawMessage: "the disk went away" });
  });

  it("end with Canceled when the caller gives up mid-stream, aborting the handler's signal and closing it", async () => {
    const client = await generation();
    const controller = new AbortController();
    const messages = client.readImage({ imageId: "hang" }, { signal: controller.signal })[Symbol.asyncIterator]();
    await messages.next();
    await messages.next();
    const third = messages.next();
    controller.abort();
    await expect(third).rejects.toMatchObject({ code: Code.Canceled });
    await expect.poll(() => seen.context!.signal.aborted).toBe(true);
    await expect.poll(() => seen.closed).toBe(true);
  });

  it("end with Canceled, with nothing left unhandled, when the handler throws as the caller resumes after aborting", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const client = await generation();
      const controller = new AbortController();
      // "midway" throws as soon as it is resumed after its first message.
      const messages = client.readImage({ imageId: "midway" }, { signal: controller.signal })[Symbol.asyncIterator]();
      await messages.next();
      controller.abort();
      await expect(messages.next()).rejects.toMatchObject({ code: Code.Canceled });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("abort the handler's signal when the caller aborts between messages and never asks for another", async () => {
    const client = await generation();
    const controller = new AbortController();
    const messages = client.readImage({ imageId: "hang" }, { signal: controller.signal })[Symbol.asyncIterator]();
    await messages.next();
    await messages.next();
    controller.abort();
    await expect.poll(() => seen.context!.signal.aborted).toBe(true);
  });

  it("abort the handler's signal at the deadline while the caller is not reading", async () => {
    const client = await generation();
    const messages = client.readImage({ imageId: "hang" }, { timeoutMs: 300 })[Symbol.asyncIterator]();
    await messages.next();
    await messages.next();
    await expect.poll(() => seen.context!.signal.aborted).toBe(true);
  });

  it("end at the caller's deadline with DeadlineExceeded", async () => {
    const client = await generation();
    await expect(readAll(client.readImage({ imageId: "hang" }, { timeoutMs: 200 }))).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    await expect.poll(() => seen.context!.signal.aborted).toBe(true);
  });

  it("refuse a request over the server's readMaxBytes with ResourceExhausted, before the handler runs", async () => {
    const client = await generation({ readMaxBytes: 64 });
    seen.context = undefined;
    await expect(readAll(client.readImage({ imageId: "i".repeat(200) }))).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect(seen.context).toBeUndefined();
  });
});
