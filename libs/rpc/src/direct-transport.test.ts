import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { createLogger } from "@orvado/core";
import { BillingService, type GetCostRequest, type GetCostResponse } from "@orvado/proto";
import { internalClient } from "./client.ts";
import { startRpcServer, type RpcServer } from "./server.ts";

// Unary calls between services in one process hand over copies of the messages
// (direct-transport.ts); these check that they keep what the network guarantees.

const SECRET = "s".repeat(32);
const logger = createLogger("test", "silent");

const seen: { request?: GetCostRequest; answer?: GetCostResponse; context?: HandlerContext } = {};

async function startServer(): Promise<RpcServer> {
  return startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: SECRET,
    serviceNames: ["orvado.v1.BillingService"],
    logger,
    routes: (router) =>
      router.service(BillingService, {
        async getCost(request, context) {
          seen.request = request;
          seen.context = context;
          if (request.requestId === "hang") return new Promise<never>(() => {});
          if (request.requestId === "crash") throw new TypeError("handler bug");
          if (request.requestId === "refuse") throw new ConnectError("no such request", Code.NotFound, { "x-reason": "unknown" });
          context.responseHeader.set("x-answered-by", "billing");
          seen.answer = { $typeName: "orvado.v1.GetCostResponse", cost: { $typeName: "orvado.v1.CostRecord", requestId: request.requestId, model: "beta", amountMicros: 20_000n } } as GetCostResponse;
          return seen.answer;
        },
      }),
  });
}

const servers: RpcServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function client() {
  const server = await startServer();
  servers.push(server);
  return internalClient(BillingService, server.url, SECRET);
}

describe("unary calls to a server in the same process", () => {
  it("go in-process without the network protocol, with the secret checked and response headers passed back", async () => {
    const billing = await client();
    let header: Headers | undefined;
    const { cost } = await billing.getCost({ requestId: "req_1" }, { onHeader: (received) => (header = received) });
    expect(cost).toMatchObject({ requestId: "req_1", model: "beta", amountMicros: 20_000n });
    expect(seen.context?.protocolName).toBe("in-process");
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
    expect(seen.answer!.cost!.model).toBe("beta");
  });

  it("refuse a caller without the shared secret", async () => {
    const server = await startServer();
    servers.push(server);
    const intruder = internalClient(BillingService, server.url, "x".repeat(32));
    await expect(intruder.getCost({ requestId: "req_3" })).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("pass errors on as the network would: code, message and metadata, not the thrown object", async () => {
    const billing = await client();
    const refused = await billing.getCost({ requestId: "refuse" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConnectError);
    expect(refused).toMatchObject({ code: Code.NotFound, rawMessage: "no such request" });
    expect((refused as ConnectError).metadata.get("x-reason")).toBe("unknown");
    const crashed = await billing.getCost({ requestId: "crash" }).catch((error: unknown) => error);
    expect(crashed).toBeInstanceOf(ConnectError);
    expect(crashed).not.toBeInstanceOf(TypeError);
    expect(crashed).toMatchObject({ code: Code.Unknown, rawMessage: "handler bug" });
  });

  it("end at the caller's deadline with DeadlineExceeded, and abort the handler's signal", async () => {
    const billing = await client();
    await expect(billing.getCost({ requestId: "hang" }, { timeoutMs: 50 })).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    expect(seen.context?.signal.aborted).toBe(true);
  });

  it("end when the caller gives up, with Canceled", async () => {
    const billing = await client();
    const controller = new AbortController();
    const call = billing.getCost({ requestId: "hang" }, { signal: controller.signal });
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: Code.Canceled });
  });
});
