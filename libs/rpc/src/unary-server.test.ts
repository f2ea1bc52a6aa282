import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createClient, Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AuthService, BillingService } from "@orvado/proto";
import { createLogger } from "@orvado/core";
import { startRpcServer } from "./server.ts";
import { sendSecret } from "./secret.ts";
import { closedAfterEachTest } from "./test-cleanup.ts";
import { startBillingStandIn, TEST_SECRET, type SeenCall } from "./test-support.ts";
import { connectTransport } from "./unary-transport.ts";
import { unaryStreamHandler } from "./unary-server.ts";

// Over real HTTP/2 (loopback): Orvado's Connect client (unary-transport.ts) against
// the unary stream handler, alone on a bare node:http2 server and in front of
// Connect's adapter in startRpcServer.

const { servers, sessions, bare } = closedAfterEachTest();

function session(url: string): Http2SessionManager {
  const manager = new Http2SessionManager(url);
  sessions.push(manager);
  return manager;
}

const billingClient = (url: string, secret = TEST_SECRET) =>
  createClient(BillingService, connectTransport({ baseUrl: url, interceptors: [sendSecret(secret)], sessionManager: session(url) }));

/** A bare HTTP/2 server whose streams go to the unary handler; those it leaves get 404 and are counted. */
async function bareServer(getCost: (context: HandlerContext) => Promise<never> | object, readMaxBytes = 1024) {
  const handler = unaryStreamHandler({
    routes: (router) => router.service(BillingService, { getCost: (_request, context) => getCost(context) as never }),
    interceptors: [],
    readMaxBytes,
  });
  const left: string[] = [];
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    if (handler(stream, headers)) return;
    left.push(`${headers[":method"]} ${headers["content-type"]}`);
    stream.respond({ ":status": 404 });
    stream.end();
  });
  bare.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, left };
}

describe("unaryStreamHandler on a bare HTTP/2 server", () => {
  it("answers a Connect unary call itself, with the handler's headers and trailers", async () => {
    const { url, left } = await bareServer((context) => {
      context.responseHeader.set("x-answered-by", "stream");
      context.responseTrailer.set("x-trailer", "yes");
      expect(context.protocolName).toBe("connect");
      expect(context.url).toBe(`${url}/orvado.v1.BillingService/GetCost`);
      return { cost: { requestId: "req_1", amountMicros: 7n } };
    });
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const answer = await billingClient(url).getCost({ requestId: "req_1" }, { onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) });
    expect(answer.cost?.amountMicros).toBe(7n);
    expect(header?.get("x-answered-by")).toBe("stream");
    expect(trailer?.get("x-trailer")).toBe("yes");
    expect(left).toEqual([]);
  });

  it("leaves what it does not serve to the server: JSON, and services it does not know", async () => {
    const { url, left } = await bareServer(() => ({}));
    const json = createClient(BillingService, createConnectTransport({ baseUrl: url, httpVersion: "2", useBinaryFormat: false, sessionManager: session(url) }));
    await expect(json.getCost({ requestId: "x" })).rejects.toBeInstanceOf(ConnectError);
    const auth = createClient(AuthService, connectTransport({ baseUrl: url, interceptors: [], sessionManager: session(url) }));
    await expect(auth.verifyKey({ secret: "x" })).rejects.toBeInstanceOf(ConnectError);
    expect(left).toEqual(["POST application/json", "POST application/proto"]);
    // A method of a served service that routes() left out is Connect's Unimplemented, answered on the stream.
    await expect(billingClient(url).listPrices({})).rejects.toMatchObject({ code: Code.Unimplemented });
    expect(left).toHaveLength(2);
  });

  it("refuses a message over readMaxBytes with ResourceExhausted, and bytes that are not the message with InvalidArgument", async () => {
    const { url } = await bareServer(() => ({}), 64);
    await expect(billingClient(url).getCost({ requestId: "r".repeat(100) })).rejects.toMatchObject({ code: Code.ResourceExhausted });
    const garbage = await fetchRaw(url, "/orvado.v1.BillingService/GetCost", Buffer.from([0xff, 0xff, 0xff]));
    expect(garbage.status).toBe(400);
    expect(JSON.parse(garbage.body)).toMatchObject({ code: "invalid_argument" });
  });

  it("turns a handler's plain error into Internal, and keeps a ConnectError's code, message and metadata", async () => {
    let throwPlain = true;
    const { url } = await bareServer(() => {
      if (throwPlain) throw new TypeError("handler bug");
      throw new ConnectError("no such request", Code.NotFound, { "x-reason": "unknown" });
    });
    await expect(billingClient(url).getCost({ requestId: "a" })).rejects.toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
    throwPlain = false;
    const error = await billingClient(url)
      .getCost({ requestId: "b" })
      .catch((reason: unknown) => ConnectError.from(reason));
    expect(error).toMatchObject({ code: Code.NotFound, rawMessage: "no such request" });
    expect((error as ConnectError).metadata.get("x-reason")).toBe("unknown");
  });

  it("answers Internal when the handler's answer cannot be serialized, and goes on serving", async () => {
    let bad = true;
    const { url } = await bareServer(() => ({ cost: { requestId: "x", amountMicros: bad ? (1.5 as never) : 2n } }));
    await expect(billingClient(url).getCost({ requestId: "a" })).rejects.toMatchObject({ code: Code.Internal });
    bad = false;
    expect((await billingClient(url).getCost({ requestId: "b" })).cost?.amountMicros).toBe(2n);
  });

  it("aborts the handler's signal when the caller resets its stream, and answers DeadlineExceeded at the deadline", async () => {
    let signal: AbortSignal | undefined;
    const { url } = await bareServer((context) => {
      signal = context.signal;
      return new Promise<never>(() => {});
    });
    const caller = new AbortController();
    const call = billingClient(url).getCost({ requestId: "hang" }, { signal: caller.signal });
    await waitFor(() => signal !== undefined);
    expect(signal!.aborted).toBe(false);
    caller.abort();
    await expect(call).rejects.toMatchObject({ code: Code.Canceled });
    await waitFor(() => signal!.aborted);
    await expect(billingClient(url).getCost({ requestId: "hang" }, { timeoutMs: 50 })).rejects.toMatchObject({ code: Code.DeadlineExceeded });
  });
});

describe("startRpcServer: the unary stream handler in front of Connect's adapter", () => {
  it("runs the server's interceptors on the stream: the shared secret is required", async () => {
    const seen: SeenCall = {};
    const server = await startBillingStandIn(seen);
    servers.push(server);
    expect((await billingClient(server.url).getCost({ requestId: "req_1" })).cost?.model).toBe("secret-seen");
    expect(seen.context?.protocolName).toBe("connect");
    // Connect's own handler context has abort(); the stream handler's light one (direct-context.ts) has not.
    expect(seen.context && "abort" in seen.context).toBe(false);
    await expect(billingClient(server.url, "w".repeat(32)).getCost({ requestId: "req_2" })).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("passes the other requests to Connect's adapter, which answers them as before", async () => {
    const seen: SeenCall = {};
    const server = await startBillingStandIn(seen);
    servers.push(server);
    const json = createClient(BillingService, createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: false, interceptors: [sendSecret(TEST_SECRET)], sessionManager: session(server.url) }));
    expect((await json.getCost({ requestId: "req_3" })).cost?.model).toBe("secret-seen");
    expect(seen.context && "abort" in seen.context).toBe(true);
  });

  it("applies the server's readMaxBytes to calls answered on the stream", async () => {
    const server = await startRpcServer({
      host: "127.0.0.1",
      port: 0,
      secret: TEST_SECRET,
      serviceNames: [BillingService.typeName],
      logger: createLogger("test", "silent"),
      readMaxBytes: 32,
      routes: (router) => router.service(BillingService, { getCost: () => ({}) }),
    });
    servers.push(server);
    await expect(billingClient(server.url).getCost({ requestId: "r".repeat(64) })).rejects.toMatchObject({ code: Code.ResourceExhausted });
    await expect(billingClient(server.url).getCost({ requestId: "short" })).resolves.toBeDefined();
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

/** A Connect unary POST with the given bytes as its body, over node:http2. */
function fetchRaw(url: string, path: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const client = http2.connect(url);
    client.on("error", reject);
    const request = client.request({ ":method": "POST", ":path": path, "content-type": "application/proto", "connect-protocol-version": "1" });
    let status = 0;
    const chunks: Buffer[] = [];
    request.on("response", (headers) => (status = Number(headers[":status"])));
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      client.close();
      resolve({ status, body: Buffer.concat(chunks).toString("utf8") });
    });
    request.end(body);
  });
}
