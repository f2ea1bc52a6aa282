import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "@orvado/core";
import { AuthService, ErrorCode } from "@orvado/proto";
import { internalClient, startRpcServer, type RpcServer } from "@orvado/rpc";
import { KeyChecker } from "./key-check.ts";

const SECRET = "k".repeat(32);
const servers: RpcServer[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/**
 * An auth stand-in on a real port, called over HTTP/2 (Connect) as the edge calls auth
 * from its own process: it counts VerifyKey calls and holds each until `answer` lets them go.
 */
async function startAuth() {
  const calls: string[] = [];
  let arrived: () => void = () => {};
  let release: () => void = () => {};
  let gate = new Promise<void>((resolve) => (release = resolve));
  const server = await startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: SECRET,
    serviceNames: ["orvado.v1.AuthService"],
    logger: createLogger("test", "silent"),
    routes: (router) =>
      router.service(AuthService, {
        async verifyKey(request) {
          calls.push(request.secret);
          arrived();
          await gate;
          if (request.secret === "td-down") throw new Error("auth is restarting");
          return { result: { case: "key", value: { keyId: `key-of-${request.secret}`, accountId: "acc_1", models: [] } } };
        },
      }),
  });
  servers.push(server);
  const client = internalClient(AuthService, server.url, SECRET, { transport: "http2" });
  return {
    client,
    calls,
    /**
     * Waits until auth has received `expectedCalls` calls in all, then answers them and returns the
     * checks. Every check was started before this is called, so a check that was going to make a
     * call of its own has made it by then (the checker registers its call before awaiting anything).
     */
    async answer<T>(checks: Promise<T>[], expectedCalls: number): Promise<T[]> {
      await new Promise<void>((resolve) => {
        arrived = () => calls.length >= expectedCalls && resolve();
        arrived();
      });
      release();
      gate = new Promise<void>((resolve) => (release = resolve));
      return Promise.all(checks);
    },
  };
}

describe("KeyChecker", () => {
  it("asks auth once for a burst of requests with the same key that arrive before the answer", async () => {
    const auth = await startAuth();
    const checker = new KeyChecker(auth.client, 1_000);
    const checks = await auth.answer(Array.from({ length: 50 }, () => checker.check("Bearer td-one")), 1);
    expect(auth.calls).toEqual(["td-one"]);
    expect(checks.every((check) => check.ok && check.key.keyId === "key-of-td-one")).toBe(true);
    // Remembered: the next request asks nobody.
    expect((await checker.check("Bearer td-one")).ok).toBe(true);
    expect(auth.calls).toHaveLength(1);
  });

  it("asks separately for different keys, and again once the answer has expired", async () => {
    const auth = await startAuth();
    let clock = 1_000_000;
    const checker = new KeyChecker(auth.client, 1_000, () => clock);
    const [one, two] = await auth.answer([checker.check("Bearer td-one"), checker.check("Bearer td-two")], 2);
    expect(one!.ok && one!.key.keyId).toBe("key-of-td-one");
    expect(two!.ok && two!.key.keyId).toBe("key-of-td-two");
    expect([...auth.calls].sort()).toEqual(["td-one", "td-two"]);
    // Still remembered just before keyCacheMs has passed; asked again once it has.
    clock += 999;
    expect((await checker.check("Bearer td-one")).ok).toBe(true);
    expect(auth.calls).toHaveLength(2);
    clock += 1;
    const [again] = await auth.answer([checker.check("Bearer td-one")], 3);
    expect(again!.ok).toBe(true);
    expect(auth.calls).toHaveLength(3);
  });

  it("remembers nothing with a cache time of 0", async () => {
    const auth = await startAuth();
    const checker = new KeyChecker(auth.client, 0, () => 0);
    await auth.answer([checker.check("Bearer td-one")], 1);
    await auth.answer([checker.check("Bearer td-one")], 2);
    expect(auth.calls).toEqual(["td-one", "td-one"]);
  });

  it("gives every waiting request the failure when auth cannot answer, tells why once, and asks again on the next request", async () => {
    const auth = await startAuth();
    const failures: unknown[] = [];
    const checker = new KeyChecker(auth.client, 1_000, Date.now, (error) => failures.push(error));
    for (const check of await auth.answer(Array.from({ length: 5 }, () => checker.check("Bearer td-down")), 1)) {
      expect(check.ok).toBe(false);
      if (!check.ok) expect(check.refusal.code).toBe(ErrorCode.SERVICE_UNAVAILABLE);
    }
    expect(auth.calls).toEqual(["td-down"]);
    expect(failures).toHaveLength(1);
    // A failure is not remembered.
    await auth.answer([checker.check("Bearer td-down")], 2);
    expect(auth.calls).toHaveLength(2);
  });
});
