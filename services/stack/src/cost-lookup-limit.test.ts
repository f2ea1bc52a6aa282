import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { startTestStack, type TestStack } from "./harness.ts";

// The public cost lookup over real HTTP (fetch to the edge), with the stack's
// services logging at info into lines this test reads back. The stack allows 5
// lookups per address per (day-long) window; every request comes from 127.0.0.1.

const LIMIT = 5;
const lines: string[] = [];
let stack: TestStack;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  stack = await startTestStack(
    { BILLING_COST_LOOKUP_MAX_PER_WINDOW: String(LIMIT), BILLING_COST_LOOKUP_WINDOW_MS: String(86_400_000) },
    { logger: pino({ level: "info" }, sink) },
  );
});
afterAll(async () => {
  await stack?.close();
});

const unknownId = (n: number) => `req_${String(n).padStart(22, "A")}`;
const lookUp = (id: string) => fetch(`${stack.edgeUrl}/api/cost/request/${id}`);

describe("the public cost lookup (HTTP)", () => {
  it("logs an unknown id as one short line without a stack", async () => {
    const id = unknownId(1);
    const response = await lookUp(id);
    expect(response.status).toBe(404);
    await response.text();
    const about = lines.filter((line) => line.includes(id));
    expect(about).toHaveLength(1);
    expect(about[0]!.length).toBeLessThan(400);
    for (const line of lines) expect(line).not.toMatch(/"stack"|\n\s+at /);
  });

  it(`answers 429 in the documented error shape with Retry-After past ${LIMIT} lookups per address, even when they arrive at once`, async () => {
    // One lookup was counted above; of 20 parallel ones, LIMIT - 1 are answered.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => lookUp(unknownId(100 + n))));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array(LIMIT - 1).fill(404), ...Array(20 - (LIMIT - 1)).fill(429)]);
    const refused = answers.find((answer) => answer.status === 429)!;
    const body = (await refused.json()) as { error: { message: string } };
    expect(body.error).toMatchObject({ type: "gateway_error", code: "too_many_attempts" });
    expect(body.error.message).toMatch(/Too many cost lookups.*\(request id: req_/);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    for (const line of lines) expect(line).not.toMatch(/"stack"/);
  });
});
