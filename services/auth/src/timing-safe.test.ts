import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

// The key check must end in crypto.timingSafeEqual over two equal-length SHA-256
// digests, so whether a hash matches is not told by how long the comparison took.
// Asserted on the code path (no timing measurement: the machine is too noisy).
const spy = vi.hoisted(() => ({ calls: [] as Array<[Buffer, Buffer]> }));
vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      spy.calls.push([Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)]);
      return real.timingSafeEqual(a, b);
    },
  };
});

const { startTestAuth } = await import("./testing.ts");
const { hashKeySecret } = await import("./keys.ts");

let auth: Awaited<ReturnType<typeof startTestAuth>>;
beforeAll(async () => {
  auth = await startTestAuth();
});
afterAll(() => auth?.close());

describe("VerifyKey's comparison", () => {
  it("runs crypto.timingSafeEqual on the stored and the presented SHA-256 digests, 32 bytes each", async () => {
    const { account } = await auth.client.createAccount({ email: "timing@example.com", password: "password-1" });
    const { secret } = await auth.client.createKey({ accountId: account!.accountId });
    spy.calls.length = 0;
    const answer = await auth.client.verifyKey({ secret });
    expect(answer.result.case).toBe("key");
    const digest = Buffer.from(hashKeySecret(secret), "hex");
    const comparison = spy.calls.find(([a, b]) => a.equals(digest) && b.equals(digest));
    expect(comparison).toBeDefined();
    expect(comparison![0].length).toBe(32);
    expect(comparison![1].length).toBe(32);
  });

  it("compares console session hashes the same way", async () => {
    await auth.client.createAccount({ email: "timing-session@example.com", password: "password-1" });
    const signedIn = await auth.client.signIn({ email: "timing-session@example.com", password: "password-1", clientIp: "10.9.9.9" });
    if (signedIn.result.case !== "signedIn") throw new Error("sign-in failed");
    spy.calls.length = 0;
    expect((await auth.client.getSession({ sessionToken: signedIn.result.value.sessionToken })).result.case).toBe("session");
    expect(spy.calls.some(([a, b]) => a.length === 32 && b.length === 32 && a.equals(b))).toBe(true);
  });
});
