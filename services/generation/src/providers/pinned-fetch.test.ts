import { createServer, type Server, type ServerResponse } from "node:http";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookup as dnsLookup } from "node:dns";
import { AnswerTooLarge, fetchWithLookup, pinnedFetch, publicOnlyLookup } from "./pinned-fetch.ts";
import { AnswerGate, type HeldBackReader } from "../answer-gate.ts";

// The address check happens where the connection is made, so a name that resolves
// to an internal address is refused even when nothing checked the name beforehand
// (the DNS-rebinding case: the name resolved to a public address a moment earlier).

let server: Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = createServer((request, response) => {
    hits += 1;
    if (request.url === "/chunked") {
      // No content-length: the limit must hold as the bytes arrive.
      response.write("a".repeat(600));
      response.end("b".repeat(600));
    } else if (request.url === "/cut") {
      response.writeHead(200, { "content-length": "1000" });
      response.write("only part of it");
      setTimeout(() => response.socket?.destroy(), 20);
    } else response.end("secret");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as { port: number }).port;
});
afterAll(() => server?.close());

describe("pinnedFetch", () => {
  it("refuses a name that resolves to an internal address at connection time, sending nothing", async () => {
    await expect(pinnedFetch(new URL(`http://localhost:${port}/x`), { method: "GET", headers: new Headers() })).rejects.toThrow(
      /resolves to the internal address/,
    );
    await expect(pinnedFetch(new URL(`http://127.0.0.1:${port}/x`), { method: "GET", headers: new Headers() })).rejects.toThrow(
      /internal address 127\.0\.0\.1/,
    );
    await expect(pinnedFetch(new URL("file:///etc/passwd"), { method: "GET", headers: new Headers() })).rejects.toThrow(/file:/);
    expect(hits).toBe(0);
  });

  const anyAddress = ((host, options, callback) => dnsLookup(host, options, callback as never)) as typeof publicOnlyLookup;
  const get = (path: string, maxBytes?: number) => fetchWithLookup(new URL(`http://localhost:${port}${path}`), { method: "GET", headers: new Headers({ accept: "image/png" }), maxBytes }, anyAddress);

  it("answers whole: status, headers and the whole body", async () => {
    const answer = await get("/image.png");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-length")).toBe("6");
    expect(Buffer.from(answer.bytes).toString()).toBe("secret");
    expect(Buffer.from((await get("/chunked", 1200)).bytes).toString()).toBe("a".repeat(600) + "b".repeat(600));
    hits = 0;
  });

  it("refuses an answer over its byte limit, whether declared or as it arrives", async () => {
    await expect(get("/image.png", 5)).rejects.toBeInstanceOf(AnswerTooLarge);
    await expect(get("/chunked", 1000)).rejects.toBeInstanceOf(AnswerTooLarge);
    hits = 0;
  });

  it("fails an answer the connection cut short instead of handing back part of it", async () => {
    await expect(get("/cut")).rejects.toThrow();
    hits = 0;
  });

  it("gives the connection's lookup only public answers", async () => {
    const answer = await new Promise<unknown>((resolve) => publicOnlyLookup("localhost", {}, (error) => resolve(error)));
    expect(String(answer)).toMatch(/internal address/);
  });
});

describe("fetchWithLookup and the call's signal (node:http, a local server that never answers)", () => {
  let hanging: Server;
  let hangingPort: number;
  const closed: Promise<void>[] = [];

  beforeAll(async () => {
    hanging = createServer((request) => closed.push(once(request.socket, "close").then(() => undefined)));
    hanging.listen(0, "127.0.0.1");
    await once(hanging, "listening");
    hangingPort = (hanging.address() as { port: number }).port;
  });
  afterAll(() => hanging?.close());

  const anyAddress = ((host, options, callback) => dnsLookup(host, options, callback as never)) as typeof publicOnlyLookup;
  const wait = (signal: AbortSignal) => fetchWithLookup(new URL(`http://127.0.0.1:${hangingPort}/hang`), { method: "GET", headers: {}, signal }, anyAddress);

  it("ends a waiting request when the signal aborts: an AbortError carrying the reason, and the connection closed", async () => {
    const controller = new AbortController();
    const waiting = wait(controller.signal);
    while (closed.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort(new Error("the job's time is up"));
    const error = await waiting.then(() => null, (reason: unknown) => reason as Error);
    expect(error).toMatchObject({ name: "AbortError", code: "ABORT_ERR", cause: { message: "the job's time is up" } });
    await closed[0];
  });

  it("sends nothing when the signal has already aborted", async () => {
    const before = closed.length;
    await expect(wait(AbortSignal.abort(new Error("too late")))).rejects.toMatchObject({ name: "AbortError" });
    expect(closed.length).toBe(before);
  });
});

describe("a kept-alive connection the upstream closed as the request went out (node:http, a local server)", () => {
  // Each connection's first request is answered; a later request on the same connection
  // finds it dropped at once (as when the upstream's idle timeout closes the connection
  // while the request is on its way), or, at /cut-later, answered in part and then cut.
  let server: Server;
  let port: number;
  const bodies: string[] = [];
  let connections = 0;

  beforeAll(async () => {
    server = createServer(async (request, response) => {
      const socket = request.socket as typeof request.socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      let body = "";
      for await (const chunk of request) body += chunk;
      bodies.push(body);
      if (request.url === "/always-drop") return void socket.destroy();
      if (socket.served === 1) return void response.end(`answered ${body}`);
      if (request.url === "/cut-later") {
        response.writeHead(200, { "content-length": "1000" });
        response.write("part");
        setTimeout(() => socket.destroy(), 10);
        return;
      }
      socket.destroy();
    });
    server.on("connection", () => (connections += 1));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => server?.close());

  const anyAddress = ((host, options, callback) => dnsLookup(host, options, callback as never)) as typeof publicOnlyLookup;
  const post = (path: string, body: string) => fetchWithLookup(new URL(`http://127.0.0.1:${port}${path}`), { method: "POST", headers: { "content-type": "text/plain" }, body }, anyAddress);

  it("is sent again once, whole, on a new connection", async () => {
    expect(Buffer.from((await post("/first", "one")).bytes).toString()).toBe("answered one");
    const before = { connections, bodies: bodies.length };
    // The pooled connection is reused, the server drops it, and the request goes out again on a new one.
    expect(Buffer.from((await post("/second", "two")).bytes).toString()).toBe("answered two");
    expect(bodies.slice(before.bodies)).toEqual(["two", "two"]);
    expect(connections - before.connections).toBe(1);
  });

  it("is not sent again when the connection was new (none was pooled): the error is the caller's", async () => {
    const before = bodies.length;
    await expect(post("/always-drop", "three")).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(bodies.length - before).toBe(1);
  });

  it("is not sent again once an answer had begun on the reused connection", async () => {
    await post("/first", "four");
    const before = bodies.length;
    await expect(post("/cut-later", "five")).rejects.toThrow(/before its answer was complete|aborted|socket hang up/);
    expect(bodies.length - before).toBe(1);
  });
});

describe("an answer waiting for its place in the answer gate (node:http, a local server)", () => {
  // The server writes a 32-MB answer as fast as the connection takes it and counts what it
  // got out; until the client admits the answer, only the kernel's buffers can take any.
  const LARGE = 32 * 1024 * 1024;
  const CHUNK = Buffer.alloc(64 * 1024, 7);
  let server: Server;
  let port: number;
  let written = 0;
  const closed: Promise<void>[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      // The client's reset (it closes with the answer unread) is expected here, not an error of the test.
      request.socket.on("error", () => undefined);
      closed.push(new Promise((resolve) => request.socket.once("close", () => resolve())));
      if (request.url === "/unsized") return void response.end("u".repeat(20_000));
      if (request.url === "/cut-in-line") {
        // 40 kB declared, 100 bytes sent, then the connection cut: the answer dies waiting in line.
        response.writeHead(200, { "content-length": "40000" });
        response.write("x".repeat(100));
        return void setTimeout(() => response.socket?.destroy(), 50);
      }
      written = 0;
      response.writeHead(200, { "content-length": String(LARGE), "content-type": "application/octet-stream" });
      const pump = () => {
        while (written < LARGE && !response.destroyed) {
          written += CHUNK.length;
          if (!response.write(CHUNK)) return void response.once("drain", pump);
        }
        response.end();
      };
      pump();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => server?.close());

  const anyAddress = ((host, options, callback) => dnsLookup(host, options, callback as never)) as typeof publicOnlyLookup;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Until the server's count stops moving: the connection has taken all it will without the client reading. */
  async function untilWritesStall(): Promise<number> {
    let last = -1;
    for (let still = 0; still < 5; ) {
      await sleep(40);
      still = written === last ? still + 1 : 0;
      last = written;
    }
    return written;
  }

  it("fails the call when the upstream cuts an answer waiting in line, and the job's release takes it out of line for good", async () => {
    const gate = new AnswerGate({ answers: 1, bytes: 1024 * 1024 });
    const holder = gate.pass();
    await holder.admit(20_000);
    const job = gate.pass();
    const url = new URL(`http://127.0.0.1:${port}/cut-in-line`);
    // The call's own signal, as upstream.ts passes it: never aborted once the call has ended.
    const call = fetchWithLookup(url, { method: "GET", headers: {}, signal: new AbortController().signal, admit: (bytes, signal) => job.admit(bytes, signal) }, anyAddress);
    await expect(call).rejects.toThrow();
    expect(gate.waiting).toBe(1);
    // The job ends (jobs.ts gives its place back whatever happened): its dead answer leaves the line,
    // so the place the holder gives back next is not taken by it, for ever.
    job.release();
    expect(gate.waiting).toBe(0);
    holder.release();
    await sleep(20);
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });

  it("is not read until admitted: the upstream is held back by TCP, then the whole answer arrives", async () => {
    let admit!: () => void;
    const admitted: number[] = [];
    const answer = fetchWithLookup(
      new URL(`http://127.0.0.1:${port}/large`),
      { method: "GET", headers: {}, admit: (bytes) => (admitted.push(bytes), new Promise<void>((resolve) => (admit = resolve))) },
      anyAddress,
    );
    while (admitted.length === 0) await sleep(5);
    expect(admitted).toEqual([LARGE]);
    // Loopback's buffers take a few MB at most; a client that read on regardless would have taken all 32.
    expect(await untilWritesStall()).toBeLessThan(LARGE / 2);
    admit();
    expect((await answer).bytes.length).toBe(LARGE);
    expect(written).toBe(LARGE);
  });

  it("with no length declared, is read whole and then waits for its place by its size", async () => {
    const calls: number[] = [];
    let admit!: () => void;
    let handed = false;
    const answer = fetchWithLookup(
      new URL(`http://127.0.0.1:${port}/unsized`),
      { method: "GET", headers: {}, admit: (bytes) => (calls.push(bytes), new Promise<void>((resolve) => (admit = resolve))) },
      anyAddress,
    ).then((whole) => ((handed = true), whole));
    while (calls.length === 0) await sleep(5);
    expect(calls).toEqual([20_000]);
    await sleep(20);
    expect(handed).toBe(false);
    admit();
    expect(Buffer.from((await answer).bytes).toString()).toBe("u".repeat(20_000));
  });

  it("ends the request when the job's signal aborts while it waits: the admission's error, and the connection closed", async () => {
    const controller = new AbortController();
    const before = closed.length;
    const answer = fetchWithLookup(
      new URL(`http://127.0.0.1:${port}/large`),
      {
        method: "GET",
        headers: {},
        signal: controller.signal,
        admit: (_bytes, signal) => new Promise<void>((_resolve, reject) => signal!.addEventListener("abort", () => reject(signal!.reason), { once: true })),
      },
      anyAddress,
    );
    while (closed.length === before) await sleep(5);
    controller.abort(new DOMException("the job's time is up", "TimeoutError"));
    await expect(answer).rejects.toMatchObject({ name: "AbortError" });
    await closed[before];
  });
});

describe("an answer whose reads are held back (node:http, a local server)", () => {
  // The server answers at once; while the connection's reads are stopped the request sees no
  // answer at all, and a large answer stays with the server (TCP flow control), unread.
  const LARGE = 32 * 1024 * 1024;
  let server: Server;
  let port: number;
  let largeAnswer: ServerResponse | undefined;
  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url !== "/large") return response.end("a".repeat(49_000));
      largeAnswer = response;
      response.end(Buffer.alloc(LARGE, 98));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => server?.close());
  const anyAddress = ((host, options, callback) => dnsLookup(host, options, callback as never)) as typeof publicOnlyLookup;

  it("is not read while stopped, is read whole once started, and its connection leaves the set when its answer begins", async () => {
    let reader: HeldBackReader | undefined;
    let takenOut = 0;
    let handed = false;
    const answer = fetchWithLookup(
      new URL(`http://127.0.0.1:${port}/`),
      {
        method: "GET",
        headers: {},
        holdBack: (given) => {
          reader = given;
          given.stop();
          return () => takenOut++;
        },
      },
      anyAddress,
    ).then((whole) => ((handed = true), whole));
    while (!reader) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect([handed, takenOut]).toEqual([false, 0]);
    reader.start();
    expect(Buffer.from((await answer).bytes).toString()).toBe("a".repeat(49_000));
    expect(takenOut).toBe(1);
  });

  it("leaves a large answer with the server while stopped, and reads it whole once started", async () => {
    let reader: HeldBackReader | undefined;
    const answer = fetchWithLookup(
      new URL(`http://127.0.0.1:${port}/large`),
      {
        method: "GET",
        headers: {},
        holdBack: (given) => {
          reader = given;
          given.stop();
          return () => {};
        },
      },
      anyAddress,
    );
    while (!reader || !largeAnswer) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // More than the kernel's buffers on both ends can take is still waiting in the server's socket.
    expect(largeAnswer.socket?.writableLength ?? 0).toBeGreaterThan(LARGE / 4);
    reader.start();
    expect((await answer).bytes.byteLength).toBe(LARGE);
  });
});
