import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BillingService } from "@orvado/proto";
import { internalClient, type InternalTransport } from "./client.ts";
import type { RpcServer } from "./server.ts";
import { startBillingStandIn, TEST_SECRET as SECRET, type SeenCall } from "./test-support.ts";

// The same rules on both paths an internal client takes to a server in this
// process: "colocated" goes in-process (no socket; unary calls via direct-transport.ts),
// "http2" through Connect's Node client to the server's Node adapter over
// loopback HTTP/2 (Connect protocol, binary protobuf).

const servers: RpcServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

describe.each<{ transport: InternalTransport; host: (server: RpcServer) => string }>([
  { transport: "colocated", host: () => "in-memory" },
  { transport: "http2", host: (server) => new URL(server.url).host },
])("internal calls over the $transport transport", ({ transport, host }) => {
  const seen: SeenCall = {};
  async function billing(options: { readMaxBytes?: number } = {}) {
    const server = await startBillingStandIn(seen, options);
    servers.push(server);
    return { server, client: internalClient(BillingService, server.url, SECRET, { transport }) };
  }

  it("carry the shared secret in the header, speak the Connect protocol, and pass response headers back", async () => {
    const { server, client } = await billing();
    let header: Headers | undefined;
    const { cost } = await client.getCost({ requestId: "req_1" }, { onHeader: (received) => (header = received) });
    expect(cost).toMatchObject({ requestId: `req_1@${host(server)}`, model: "secret-seen", amountMicros: 20_000n });
    expect(seen.context?.protocolName).toBe("connect");
    expect(seen.context?.requestHeader.get("x-orvado-internal-secret")).toBe(SECRET);
    expect(header?.get("x-answered-by")).toBe("billing");
  });

  it("refuse a caller without the shared secret", async () => {
    const { server } = await billing();
    const intruder = internalClient(BillingService, server.url, "x".repeat(32), { transport });
    await expect(intruder.getCost({ requestId: "req_2" })).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("give each side its own copy of every message", async () => {
    const { client } = await billing();
    const request = { requestId: "req_3", accountId: "acct_1" };
    const answer = await client.getCost(request);
    expect(seen.request).not.toBe(request);
    expect(answer).not.toBe(seen.answer);
    answer.cost!.model = "changed by the caller";
    expect(seen.answer!.cost!.model).toBe("secret-seen");
  });

  it("pass errors on as received: code, message and metadata; a plain error as Internal, its message kept on the server", async () => {
    const { client } = await billing();
    const refused = await client.getCost({ requestId: "missing" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConnectError);
    expect(refused).toMatchObject({ code: Code.NotFound, rawMessage: "no such request" });
    expect((refused as ConnectError).metadata.get("x-reason")).toBe("unknown");
    const crashed = await client.getCost({ requestId: "crash" }).catch((error: unknown) => error);
    expect(crashed).toBeInstanceOf(ConnectError);
    expect(crashed).not.toBeInstanceOf(TypeError);
    expect(crashed).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
  });

  it("end at the caller's deadline with DeadlineExceeded, the handler seeing the time left and its signal aborted", async () => {
    const { client } = await billing();
    seen.context = undefined;
    const call = client.getCost({ requestId: "hang" }, { timeoutMs: 200 });
    call.catch(() => {});
    await expect.poll(() => seen.context).toBeDefined();
    const left = seen.context!.timeoutMs()!;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(200);
    await expect(call).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    await expect.poll(() => seen.context!.signal.aborted).toBe(true);
  });

  it("end with Canceled when the caller gives up, and abort the handler's signal", async () => {
    const { client } = await billing();
    seen.context = undefined;
    const controller = new AbortController();
    const call = client.getCost({ requestId: "hang" }, { signal: controller.signal });
    call.catch(() => {});
    await expect.poll(() => seen.context).toBeDefined();
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: Code.Canceled });
    await expect.poll(() => seen.context!.signal.aborted).toBe(true);
  });

  it("leave nothing listening on the caller's signal once calls end", async () => {
    const { client } = await billing();
    const signal = new AbortController().signal;
    await Promise.all(Array.from({ length: 20 }, (_, index) => client.getCost({ requestId: `req_${index}` }, { signal })));
    await client.getCost({ requestId: "missing" }, { signal }).catch(() => {});
    await client.getCost({ requestId: "hang" }, { signal, timeoutMs: 20 }).catch(() => {});
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("refuse a request over the server's readMaxBytes with ResourceExhausted, before the handler runs", async () => {
    const { client } = await billing({ readMaxBytes: 64 });
    seen.request = undefined;
    await expect(client.getCost({ requestId: "r".repeat(200) })).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect(seen.request).toBeUndefined();
  });
});
