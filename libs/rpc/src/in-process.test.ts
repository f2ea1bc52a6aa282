import { afterEach, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { BillingService } from "@orvado/proto";
import { internalClient } from "./client.ts";
import type { RpcServer } from "./server.ts";
import { startBillingStandIn as startEchoServer, TEST_SECRET as SECRET } from "./test-support.ts";

const servers: RpcServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

// Which path an internal client takes, call by call: in-process (direct-transport.ts)
// while a server for its URL runs in this process, loopback HTTP/2 otherwise.
// client.test.ts checks that both paths keep the same rules.

describe("internal clients of a service in the same process", () => {
  it("call it in-process, with the shared secret passed as on the network", async () => {
    const server = await startEchoServer();
    servers.push(server);
    const client = internalClient(BillingService, server.url, SECRET);
    const { cost } = await client.getCost({ requestId: "req_1" });
    expect(cost?.requestId).toBe("req_1@in-memory");
    expect(cost?.model).toBe("secret-seen");
  });

  it("keep the server's rules: a wrong secret is refused, error codes come through", async () => {
    const server = await startEchoServer();
    servers.push(server);
    const intruder = internalClient(BillingService, server.url, "x".repeat(32));
    await expect(intruder.getCost({ requestId: "req_1" })).rejects.toMatchObject({ code: Code.Unauthenticated });
    const client = internalClient(BillingService, server.url, SECRET);
    await expect(client.getCost({ requestId: "missing" })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("use the network for any address this process's servers do not listen on", async () => {
    const server = await startEchoServer();
    servers.push(server);
    // The same port on another loopback address: an in-process match would answer; the socket is refused.
    const elsewhere = internalClient(BillingService, server.url.replace("127.0.0.1", "127.0.0.2"), SECRET);
    await expect(elsewhere.getCost({ requestId: "req_2" })).rejects.toMatchObject({ code: Code.Unavailable });
  });

  it("are refused like remote callers once the server has closed", async () => {
    const server = await startEchoServer();
    const client = internalClient(BillingService, server.url, SECRET);
    await client.getCost({ requestId: "req_3" });
    await server.close();
    await expect(client.getCost({ requestId: "req_3" })).rejects.toMatchObject({ code: Code.Unavailable });
  });
});

describe("internal clients with the http2 transport", () => {
  it("call a server in the same process over HTTP/2, as a client in another process would", async () => {
    const server = await startEchoServer();
    servers.push(server);
    const client = internalClient(BillingService, server.url, SECRET, { transport: "http2" });
    const { cost } = await client.getCost({ requestId: "req_4" });
    // The handler saw the server's own host and port, not the in-process "in-memory" host.
    expect(cost?.requestId).toBe(`req_4@${new URL(server.url).host}`);
    expect(cost?.model).toBe("secret-seen");
    const intruder = internalClient(BillingService, server.url, "x".repeat(32), { transport: "http2" });
    await expect(intruder.getCost({ requestId: "req_4" })).rejects.toMatchObject({ code: Code.Unauthenticated });
  });
});
