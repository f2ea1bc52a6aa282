import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { ConsoleBrowser } from "./console-browser.ts";

// The sign-in limit under parallel guesses, over real HTTP to the console API
// (POST /console/api/session). Every attempt is counted before its password is
// checked, so a burst of simultaneous guesses reaches the password check at most
// as many times as the limit allows. The stack runs with 5 failures per account
// and 12 per address per window; every request comes from 127.0.0.1.

const PER_ACCOUNT = 5;
const PER_IP = 12;
const PARALLEL = 150;

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT: String(PER_ACCOUNT),
    AUTH_SIGNIN_MAX_FAILURES_PER_IP: String(PER_IP),
  });
});
afterAll(async () => {
  await stack?.close();
});

async function statuses(attempts: Array<() => Promise<{ status: number }>>): Promise<Map<number, number>> {
  const answers = await Promise.all(attempts.map((attempt) => attempt()));
  const counts = new Map<number, number>();
  for (const { status } of answers) counts.set(status, (counts.get(status) ?? 0) + 1);
  return counts;
}

describe("sign-in limits under parallel attempts (HTTP)", () => {
  it("do not count successful sign-ins against the address", async () => {
    for (let attempt = 0; attempt < PER_IP + 3; attempt += 1) {
      expect((await new ConsoleBrowser(stack.edgeUrl).signIn(TEST_ADMIN.email, TEST_ADMIN.password)).status).toBe(200);
    }
  });

  it(`check at most ${PER_ACCOUNT} of ${PARALLEL} simultaneous wrong passwords for one email and answer the rest 429`, async () => {
    const counts = await statuses(
      Array.from({ length: PARALLEL }, () => () => new ConsoleBrowser(stack.edgeUrl).signIn(TEST_ADMIN.email, "wrong-guess-1")),
    );
    expect(Object.fromEntries(counts)).toEqual({ 401: PER_ACCOUNT, 429: PARALLEL - PER_ACCOUNT });
  });

  it(`check at most ${PER_IP} failures from one address across ${PARALLEL} simultaneous emails`, async () => {
    // The burst above left PER_ACCOUNT failures on this address.
    const counts = await statuses(
      Array.from({ length: PARALLEL }, (_, n) => () => new ConsoleBrowser(stack.edgeUrl).signIn(`spray-${n}@example.test`, "guess-guess")),
    );
    expect(Object.fromEntries(counts)).toEqual({ 401: PER_IP - PER_ACCOUNT, 429: PARALLEL - (PER_IP - PER_ACCOUNT) });
    const blocked = await new ConsoleBrowser(stack.edgeUrl).signIn("someone-else@example.test", "guess-guess");
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
