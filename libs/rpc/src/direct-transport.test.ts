import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BillingService } from "@orvado/proto";
import { internalClient } from "./client.ts";
import type { RpcServer } from "./server.ts";
import { startBillingStandIn, TEST_SECRET as SECRET, type SeenCall } from "./test-support.ts";

// Transport: in-process. Unary calls between services in one process hand over
// copies of the messages (direct-transport.ts, chosen by colocatedTransport in
// in-process.ts); these check that they keep what the network guarantees.
// client.test.ts runs the same rules over this path and loopback HTTP/2.

const seen: SeenCall = {};
const startServer = (options: { readMaxBytes?: number } = {}) => startBillingStandIn(seen, options);

const servers: RpcServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function client(options: { readMaxBytes?: number } = {}) {
  const server = await startServer(options);
  servers.push(server);
  return internalClient(BillingService, server.url, SECRET);
}

describe("unary calls to a server in the same process", () => {
  it("go in-process without encoding (no Content-Type), with the secret checked and response headers passed back", async () => {
    const billing = await client();
    let header: Headers | undefined;
    const { cost } = await billing.getCost({ requestId: "req_1" }, { onHeader: (received) => (header = received) });
    expect(cost).toMatchObject({ requestId: "req_1@in-memory", model: "secret-seen", amountMicros: 20_000n });
    expect(seen.context?.protocolName).toBe("connect");
    expect(seen.context?.requestHeader.has("content-type")).toBe(false);
    expect(seen.context?.requestHeader.get("x-orvado-internal-secret")).toBe(SECRET);
    expect(header?.get("x-answered-by")).toBe("billing");
  });

  it("give each side its own copy of every message", async () => {
    const billing = await client();
    const request = { requestId: "req_2", accountId: "acct_1" };
    const answer = await billing.getCost(request);
    expect(seen.request).not.toBe(request);
    expect(answer).not.toBe(seen.answer);
    expect(answer.cost).not.toBe(seen.answer!.cost);
    answer.cost!.model = "changed by the caller";
    expect(seen.answer!.cost!.model).toBe("secret-seen");
  });

  it("refuse a caller without the shared secret", async () => {
    const server = await startServer();
    servers.push(server);
    const intruder = internalClient(BillingService, server.url, "x".repeat(32));
    await expect(intruder.getCost({ requestId: "req_3" })).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("refuse a message no wire could carry (an unpaired surrogate) with InvalidArgument, before the handler runs", async () => {
    const billing = await client();
    seen.request = undefined;
    await expect(billing.getCost({ requestId: "req_\ud800" })).rejects.toMatchObject({ code: Code.InvalidArgument });
    expect(seen.request).toBeUndefined();
  });

  it("pass errors on as the network would: code, message and metadata, not the thrown object", async () => {
    const billing = await client();
    const refused = await billing.getCost({ requestId: "missing" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConnectError);
    expect(refused).toMatchObject({ code: Code.NotFound, rawMessage: "no such request" });
    expect((refused as ConnectError).metadata.get("x-reason")).toBe("unknown");
    const crashed = await billing.getCost({ requestId: "crash" }).catch((error: unknown) => error);
    expect(crashed).toBeInstanceOf(ConnectError);
    expect(crashed).not.toBeInstanceOf(TypeError);
    expect(crashed).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
  });

  it("with the server's readMaxBytes set, take a request within it and refuse a larger one with ResourceExhausted", async () => {
    const billing = await client({ readMaxBytes: 64 });
    const { cost } = await billing.getCost({ requestId: "req_small" });
    expect(cost?.requestId).toBe("req_small@in-memory");
    seen.request = undefined;
    await expect(billing.getCost({ requestId: "r".repeat(200) })).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect(seen.request).toBeUndefined();
  });

  it("end at the caller's deadline with DeadlineExceeded, and abort the handler's signal", async () => {
    const billing = await client();
    await expect(billing.getCost({ requestId: "hang" }, { timeoutMs: 50 })).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    expect(seen.context?.signal.aborted).toBe(true);
  });

  it("give a handler that reads its signal mid-call one that aborts at the deadline, with the time left counting down", async () => {
    const billing = await client();
    const call = billing.getCost({ requestId: "hang" }, { timeoutMs: 200 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const signal = seen.context!.signal;
    expect(signal.aborted).toBe(false);
    const left = seen.context!.timeoutMs()!;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(200);
    await expect(call).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ code: Code.DeadlineExceeded });
  });

  it("end the handler's signal with the call, whenever the handler reads it", async () => {
    const billing = await client();
    await billing.getCost({ requestId: "req_ended" });
    expect(seen.context!.signal.aborted).toBe(true);
    expect(seen.context!.signal.reason).toMatchObject({ code: Code.Canceled, rawMessage: "the call has ended" });
    expect(seen.context!.timeoutMs()).toBeUndefined();
  });

  it("leave nothing listening on the caller's signal once calls end", async () => {
    const billing = await client();
    const signal = new AbortController().signal;
    await Promise.all(Array.from({ length: 50 }, (_, index) => billing.getCost({ requestId: `req_${index}` }, { signal })));
    await billing.getCost({ requestId: "missing" }, { signal }).catch(() => {});
    await billing.getCost({ requestId: "hang" }, { signal, timeoutMs: 20 }).catch(() => {});
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("end when the caller gives up, with Canceled", async () => {
    const billing = await client();
    const controller = new AbortController();
    const call = billing.getCost({ requestId: "hang" }, { signal: controller.signal });
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: Code.Canceled });
  });
});
