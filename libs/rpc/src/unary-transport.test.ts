import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createClient, Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { Http2SessionManager } from "@connectrpc/connect-node";
import { BillingService, AuthService } from "@orvado/proto";
import { sendSecret } from "./secret.ts";
import { closedAfterEachTest } from "./test-cleanup.ts";
import { startBillingStandIn, TEST_SECRET } from "./test-support.ts";
import { connectTransport, MethodUrls, sentOnce } from "./unary-transport.ts";

// Over real HTTP/2 (Connect protocol, binary protobuf) to a server made by startRpcServer.

const { servers, sessions, bare } = closedAfterEachTest();

async function billingOverHttp2() {
  const server = await startBillingStandIn();
  servers.push(server);
  const sessionManager = new Http2SessionManager(server.url);
  sessions.push(sessionManager);
  const transport = connectTransport({ baseUrl: server.url, interceptors: [sendSecret(TEST_SECRET)], sessionManager });
  return { server, client: createClient(BillingService, transport) };
}

describe("connectTransport (unary calls over HTTP/2)", () => {
  it("sends the request with the interceptors' headers and reads the answer and its headers", async () => {
    const { server, client } = await billingOverHttp2();
    let answeredBy: string | null = null;
    const { cost } = await client.getCost({ requestId: "req_1" }, { onHeader: (header) => (answeredBy = header.get("x-answered-by")) });
    expect(cost?.requestId).toBe(`req_1@${new URL(server.url).host}`);
    expect(cost?.model).toBe("secret-seen");
    expect(cost?.amountMicros).toBe(20_000n);
    expect(answeredBy).toBe("billing");
    // A second call to the same method (its URL now remembered) goes to the same place.
    expect((await client.getCost({ requestId: "req_2" })).cost?.requestId).toBe(`req_2@${new URL(server.url).host}`);
  });

  it("gives the server's error with its code, message and metadata", async () => {
    const { client } = await billingOverHttp2();
    const error = await client.getCost({ requestId: "missing" }).then(
      () => null,
      (reason: unknown) => ConnectError.from(reason),
    );
    expect(error?.code).toBe(Code.NotFound);
    expect(error?.rawMessage).toBe("no such request");
    expect(error?.metadata.get("x-reason")).toBe("unknown");
  });

  it("ends a call at its deadline, and when the caller aborts it", async () => {
    const { client } = await billingOverHttp2();
    await expect(client.getCost({ requestId: "hang" }, { timeoutMs: 50 })).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    const caller = new AbortController();
    const call = client.getCost({ requestId: "hang" }, { signal: caller.signal });
    caller.abort();
    await expect(call).rejects.toMatchObject({ code: Code.Canceled });
  });

  it("refuses a method the server does not serve as Connect does: Unimplemented", async () => {
    const server = await startBillingStandIn();
    servers.push(server);
    const sessionManager = new Http2SessionManager(server.url);
    sessions.push(sessionManager);
    const auth = createClient(AuthService, connectTransport({ baseUrl: server.url, interceptors: [sendSecret(TEST_SECRET)], sessionManager }));
    await expect(auth.verifyKey({ secret: "x" })).rejects.toMatchObject({ code: Code.Unimplemented });
  });
});

describe("connectTransport, a call without caller signal or deadline", () => {
  it("runs the interceptors first one outermost, each seeing the request the one before passed on", async () => {
    const server = await startBillingStandIn();
    servers.push(server);
    const sessionManager = new Http2SessionManager(server.url);
    sessions.push(sessionManager);
    const order: string[] = [];
    const noting =
      (name: string): Interceptor =>
      (next) =>
      async (req) => {
        order.push(`${name}:${req.header.get("x-step") ?? "-"}`);
        req.header.set("x-step", name);
        const res = await next(req);
        order.push(`${name} done`);
        return res;
      };
    const client = createClient(BillingService, connectTransport({ baseUrl: server.url, interceptors: [noting("outer"), noting("inner"), sendSecret(TEST_SECRET)], sessionManager }));
    expect((await client.getCost({ requestId: "req_5" })).cost?.model).toBe("secret-seen");
    expect(order).toEqual(["outer:-", "inner:outer", "inner done", "outer done"]);
  });

  it("resets the HTTP/2 stream of an answer it refuses (here a wrong content type), so the stream does not stay open", async () => {
    // A bare HTTP/2 server that answers 200 text/plain and never ends the stream itself.
    const closed = new Promise<number>((resolve) => {
      const server = http2.createServer((_request, response) => {
        response.stream.on("close", () => resolve(response.stream.rstCode));
        response.writeHead(200, { "content-type": "text/plain" });
        response.write("not protobuf");
      });
      bare.push(server);
      server.listen(0, "127.0.0.1");
    });
    await new Promise((resolve) => bare[0]!.once("listening", resolve));
    const url = `http://127.0.0.1:${(bare[0]!.address() as AddressInfo).port}`;
    const sessionManager = new Http2SessionManager(url);
    sessions.push(sessionManager);
    const client = createClient(BillingService, connectTransport({ baseUrl: url, interceptors: [], sessionManager }));
    await expect(client.getCost({ requestId: "req_6" })).rejects.toMatchObject({ message: expect.stringContaining("unsupported content type") });
    expect(await closed).not.toBe(http2.constants.NGHTTP2_NO_ERROR);
  });
});

describe("MethodUrls", () => {
  it("makes each method's URL once and keeps methods apart", () => {
    const urls = new MethodUrls("http://127.0.0.1:7103/");
    const getCost = BillingService.method.getCost;
    const first = urls.of(getCost);
    expect(first).toBe("http://127.0.0.1:7103/orvado.v1.BillingService/GetCost");
    expect(urls.of(getCost)).toBe(first);
    const other = Object.values(BillingService.method).find((method) => method !== getCost)!;
    expect(urls.of(other)).toBe(`http://127.0.0.1:7103/orvado.v1.BillingService/${other.name}`);
    expect(urls.of(getCost)).toBe(first);
  });
});

describe("sentOnce", () => {
  it("yields the bytes once, then ends, every time it is asked again", async () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const body = sentOnce(bytes);
    const iterator = body[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: bytes });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(await body[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
  });
});
