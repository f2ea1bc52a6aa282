import { afterEach, describe, expect, it } from "vitest";
import { createLogger, newRequestId } from "@orvado/core";
import { BillingService } from "@orvado/proto";
import { startRpcServer, type RpcServer } from "@orvado/rpc";
import { loadEdgeConfig, startEdge, type RunningEdge } from "./index.ts";

// Which client address the edge passes on (to billing's per-address lookup limit,
// auth's sign-in limit) when X-Forwarded-For is sent: the edge over real HTTP, a
// billing stand-in over Connect recording the address each cost lookup carried.

const SECRET = "p".repeat(32);
const running: Array<RpcServer | RunningEdge> = [];
afterEach(async () => {
  for (const item of running.splice(0)) await ("close" in item ? item.close() : item.stop());
});

async function edgeWithBilling(trustedProxies: string): Promise<{ edge: RunningEdge; addresses: string[] }> {
  const addresses: string[] = [];
  const billing = await startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: SECRET,
    serviceNames: ["orvado.v1.BillingService"],
    logger: createLogger("test", "silent"),
    routes: (router) =>
      router.service(BillingService, {
        getCost(request) {
          addresses.push(request.clientAddress);
          return {};
        },
      }),
  });
  running.push(billing);
  const config = loadEdgeConfig({ ORVADO_INTERNAL_SECRET: SECRET, PORT: "0", ORVADO_BILLING_URL: billing.url, EDGE_TRUSTED_PROXIES: trustedProxies });
  const edge = await startEdge(config, { logger: createLogger("test", "silent") });
  running.push(edge);
  return { edge, addresses };
}

const lookUp = (edge: RunningEdge, forwardedFor: string) => fetch(`${edge.url}/api/cost/request/${newRequestId()}`, { headers: { "x-forwarded-for": forwardedFor } });

describe("the client address behind a load balancer (HTTP to the edge, Connect to billing)", () => {
  it("ignores X-Forwarded-For when no balancer is trusted: the connection's address counts", async () => {
    const { edge, addresses } = await edgeWithBilling("");
    await lookUp(edge, "203.0.113.7");
    expect(addresses).toEqual(["127.0.0.1"]);
  });

  it("takes only the address a trusted balancer appended, never entries the client sent", async () => {
    const { edge, addresses } = await edgeWithBilling("127.0.0.1");
    // As HAProxy's `option forwardfor` passes it on: the client's own header, then the client's address.
    await lookUp(edge, "198.51.100.1, 203.0.113.7");
    await lookUp(edge, "203.0.113.8");
    // A client on the balancer's own machine: its address is the balancer's, and its own entry is still not believed.
    await lookUp(edge, "198.51.100.1, 127.0.0.1");
    expect(addresses).toEqual(["203.0.113.7", "203.0.113.8", "127.0.0.1"]);
  });

  it("ignores X-Forwarded-For from a connection that is not a trusted balancer", async () => {
    const { edge, addresses } = await edgeWithBilling("10.0.0.0/8");
    await lookUp(edge, "203.0.113.7");
    expect(addresses).toEqual(["127.0.0.1"]);
  });
});
