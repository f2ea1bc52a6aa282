import { Writable } from "node:stream";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startTestStack, type TestStack } from "./harness.ts";

// Logs carry the request id on every line of a job: the stack runs with a pino
// logger whose lines this test reads back.

interface LogLine {
  msg: string;
  service?: string;
  requestId?: string;
  originalRequestId?: string;
}

const lines: LogLine[] = [];
let stack: TestStack;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(text));
      done();
    },
  });
  stack = await startTestStack({}, { logger: pino({ level: "info" }, sink) });
});
afterAll(async () => {
  await stack?.close();
});

describe("job logs", () => {
  it("carry the request id on every line of a job, and the original's id on a retry's", async () => {
    const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    const { account } = await auth.createAccount({ email: `logs-${randomUUID()}@example.test`, password: "correct horse battery" });
    await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "test" });
    const { secret } = await auth.createKey({ accountId: account!.accountId, name: "test" });
    const post = (prompt: string, headers: Record<string, string> = {}) =>
      fetch(`${stack.edgeUrl}/v1/images/generations`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${secret}`, ...headers },
        body: JSON.stringify({ model: "beta", prompt }),
      });

    const idempotency = { "idempotency-key": randomUUID() };
    const first = await post("logged", idempotency);
    const retry = await post("logged", idempotency);
    const requestId = first.headers.get("x-request-id")!;
    expect(retry.headers.get("x-request-id")).toBe(requestId);

    const jobLines = lines.filter((line) => line.service === "generation" && /job|idempotent/i.test(line.msg));
    expect(jobLines.find((line) => line.msg === "job succeeded")?.requestId).toBe(requestId);
    expect(jobLines.every((line) => typeof line.requestId === "string" && line.requestId.startsWith("req_"))).toBe(true);
    const attached = jobLines.find((line) => /attaches/.test(line.msg));
    expect(attached?.originalRequestId).toBe(requestId);
    expect(attached?.requestId).not.toBe(requestId);
    const edgeLines = lines.filter((line) => line.service === "edge" && line.msg === "request");
    expect(edgeLines.length).toBeGreaterThanOrEqual(2);
    expect(edgeLines.every((line) => line.requestId?.startsWith("req_"))).toBe(true);
  });
});
