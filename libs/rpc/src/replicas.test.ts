// Replicas behind one client, over real HTTP/2 sockets. The servers listen on
// 127.0.0.2, an address this process's clients never call in-process, so every
// call here crosses the network as it does between machines.
import http2 from "node:http2";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { createLogger } from "@orvado/core";
import { BillingService, health } from "@orvado/proto";
import { internalClient } from "./client.ts";
import { startRpcServer, type RpcServer } from "./server.ts";
import { TEST_SECRET as SECRET } from "./test-support.ts";
import { REFUSED_REPLICA_COOLDOWN_MS } from "./replicas.ts";

const HOST = "127.0.0.2";
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A billing replica whose GetCost records every request id its handler ran, and answers with its own name. */
async function startReplica(name: string, handled: string[], port = 0): Promise<RpcServer> {
  const server = await startRpcServer({
    host: HOST,
    port,
    secret: SECRET,
    serviceNames: ["orvado.v1.BillingService"],
    logger: createLogger("test", "silent"),
    routes: (router) =>
      router.service(BillingService, {
        getCost(request) {
          handled.push(request.requestId);
          return { cost: { requestId: request.requestId, model: name, amountMicros: 1n } };
        },
      }),
  });
  closers.push(() => server.close());
  return server;
}

/** A plain HTTP/2 server that does `onStream` to every request it receives. */
async function startRawServer(onStream: (stream: http2.ServerHttp2Stream) => void): Promise<{ url: string; streams: () => number }> {
  let streams = 0;
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => sessions.add(session));
  server.on("stream", (stream) => {
    streams++;
    // The stream's own error (the refusal it was closed with) is the point, not a fault.
    stream.on("error", () => {});
    onStream(stream);
  });
  server.listen(0, HOST);
  await once(server, "listening");
  closers.push(async () => {
    const closed = once(server, "close");
    server.close();
    for (const session of sessions) session.destroy();
    await closed;
  });
  return { url: `http://${HOST}:${(server.address() as AddressInfo).port}`, streams: () => streams };
}

/** A URL nothing listens on: a replica that is down (connection refused). */
async function stoppedReplicaUrl(): Promise<string> {
  const server = await startReplica("stopped", []);
  const url = server.url;
  await server.close();
  return url;
}

describe("a client given several replicas of a service (HTTP/2 over loopback)", () => {
  it("spreads calls across them in turn", async () => {
    const handledA: string[] = [];
    const handledB: string[] = [];
    const a = await startReplica("a", handledA);
    const b = await startReplica("b", handledB);
    const client = internalClient(BillingService, `${a.url}, ${b.url}`, SECRET);
    const answeredBy: string[] = [];
    for (let i = 0; i < 6; i++) answeredBy.push((await client.getCost({ requestId: `req_${i}` })).cost!.model);
    expect(answeredBy).toEqual(["a", "b", "a", "b", "a", "b"]);
    expect(handledA).toEqual(["req_0", "req_2", "req_4"]);
    expect(handledB).toEqual(["req_1", "req_3", "req_5"]);
  });

  it("answers every call while one replica is stopped, each handled exactly once", async () => {
    const handled: string[] = [];
    const live = await startReplica("live", handled);
    const client = internalClient(BillingService, [await stoppedReplicaUrl(), live.url], SECRET);
    const ids = Array.from({ length: 20 }, (_, i) => `req_${i}`);
    const answers = await Promise.all(ids.map((requestId) => client.getCost({ requestId })));
    expect(answers.map((answer) => answer.cost!.model)).toEqual(ids.map(() => "live"));
    expect([...handled].sort()).toEqual([...ids].sort());
  });

  it("keeps working when a replica stops between calls, and uses it again once it is back", async () => {
    const handledA: string[] = [];
    const handledB: string[] = [];
    const a = await startReplica("a", handledA);
    const b = await startReplica("b", handledB);
    const client = internalClient(BillingService, [a.url, b.url], SECRET);
    await client.getCost({ requestId: "warm_a" });
    await client.getCost({ requestId: "warm_b" });
    await a.close();
    for (let i = 0; i < 4; i++) await client.getCost({ requestId: `while_down_${i}` });
    expect(handledB).toEqual(["warm_b", "while_down_0", "while_down_1", "while_down_2", "while_down_3"]);
    expect(handledA).toEqual(["warm_a"]);

    // Back on its port: once its refusal is older than the cool-down, it takes its turn again.
    await startReplica("a", handledA, a.port);
    await new Promise((resolve) => setTimeout(resolve, REFUSED_REPLICA_COOLDOWN_MS + 100));
    for (let i = 0; i < 4; i++) await client.getCost({ requestId: `back_${i}` });
    expect(handledA.filter((id) => id.startsWith("back_"))).toHaveLength(2);
    expect(handledB.filter((id) => id.startsWith("back_"))).toHaveLength(2);
  });

  it("does not send a call again once it reached a replica that then failed (the connection cut mid-call)", async () => {
    const handled: string[] = [];
    const cutter = await startRawServer((stream) => stream.session?.destroy());
    const live = await startReplica("live", handled);
    const client = internalClient(BillingService, [cutter.url, live.url], SECRET);
    // The first call goes to the first replica in the list.
    const failure = await client.getCost({ requestId: "req_cut" }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: expect.any(Number) });
    expect(cutter.streams()).toBe(1);
    expect(handled).toEqual([]);
  });

  it("sends a call on when the replica answered REFUSED_STREAM (HTTP/2: nothing was processed)", async () => {
    const handled: string[] = [];
    const refuser = await startRawServer((stream) => stream.close(http2.constants.NGHTTP2_REFUSED_STREAM));
    const live = await startReplica("live", handled);
    const client = internalClient(BillingService, [refuser.url, live.url], SECRET);
    const { cost } = await client.getCost({ requestId: "req_refused" });
    expect(cost?.model).toBe("live");
    expect(refuser.streams()).toBe(1);
    expect(handled).toEqual(["req_refused"]);
  });

  it("fails as one replica would when every replica refuses", async () => {
    const client = internalClient(BillingService, [await stoppedReplicaUrl(), await stoppedReplicaUrl()], SECRET);
    await expect(client.getCost({ requestId: "req_nowhere" })).rejects.toMatchObject({ code: Code.Unavailable });
  });

  it("moves a server-streaming call off a stopped replica too (grpc.health.v1 Watch)", async () => {
    const live = await startReplica("live", []);
    const client = internalClient(health.Health, [await stoppedReplicaUrl(), live.url], SECRET);
    const abort = new AbortController();
    for await (const answer of client.watch({ service: "" }, { signal: abort.signal })) {
      expect(answer.status).toBe(health.HealthCheckResponse_ServingStatus.SERVING);
      abort.abort();
      break;
    }
  });
});
