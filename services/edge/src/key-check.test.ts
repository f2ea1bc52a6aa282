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

/** An auth stand-in over real Connect: counts VerifyKey calls and answers each when `release` is called. */
async function startAuth() {
  const calls: string[] = [];
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
          await gate;
          if (request.secret === "td-down") throw new Error("auth is restarting");
          return { result: { case: "key", value: { keyId: `key-of-${request.secret}`, accountId: "acc_1", models: [] } } };
        },
      }),
  });
  servers.push(server);
  const client = internalClient(AuthService, server.url, SECRET);
  return {
    client,
    calls,
    /** Lets the calls that have arrived meanwhile reach auth, answers them, and returns the checks. */
    async answer<T>(checks: Promise<T>[]): Promise<T[]> {
      await new Promise((resolve) => setTimeout(resolve, 50));
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
    const checks = await auth.answer(Array.from({ length: 50 }, () => checker.check("Bearer td-one")));
    expect(auth.calls).toEqual(["td-one"]);
    expect(checks.every((check) => check.ok && check.key.keyId === "key-of-td-one")).toBe(true);
    // Remembered: the next request asks nobody.
    expect((await checker.check("Bearer td-one")).ok).toBe(true);
    expect(auth.calls).toHaveLength(1);
  });

  it("asks separately for different keys, and again once the answer has expired", async () => {
    const auth = await startAuth();
    const checker = new KeyChecker(auth.client, 0);
    const [one, two] = await auth.answer([checker.check("Bearer td-one"), checker.check("Bearer td-two")]);
    expect(one!.ok && one!.key.keyId).toBe("key-of-td-one");
    expect(two!.ok && two!.key.keyId).toBe("key-of-td-two");
    expect([...auth.calls].sort()).toEqual(["td-one", "td-two"]);
    // Nothing is remembered with a cache time of 0: a later request asks again.
    const [again] = await auth.answer([checker.check("Bearer td-one")]);
    expect(again!.ok).toBe(true);
    expect(auth.calls).toHaveLength(3);
  });

  it("gives every waiting request the failure when auth cannot answer, and asks again on the next request", async () => {
    const auth = await startAuth();
    const checker = new KeyChecker(auth.client, 1_000);
    for (const check of await auth.answer(Array.from({ length: 5 }, () => checker.check("Bearer td-down")))) {
      expect(check.ok).toBe(false);
      if (!check.ok) expect(check.refusal.code).toBe(ErrorCode.SERVICE_UNAVAILABLE);
    }
    expect(auth.calls).toEqual(["td-down"]);
    // A failure is not remembered.
    await auth.answer([checker.check("Bearer td-down")]);
    expect(auth.calls).toHaveLength(2);
  });
});
