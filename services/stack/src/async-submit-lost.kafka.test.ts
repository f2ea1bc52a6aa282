import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startProcessesOnKafka, type E2eStack } from "./e2e-stack.ts";
import type { ProcessStack } from "./process-stack.ts";
import { openApiViolations, validatingFetch } from "./openapi-validation.ts";

// An async submit whose generation process dies after its 202 (issue 56 item 2): the four services
// as separate processes on Kafka and PostgreSQL, over real HTTP to the edge and Connect over HTTP/2
// between them. Generation is killed with SIGKILL mid-job and started again; its orphan sweeper
// fails the lost job (orphan-jobs.ts) and billing releases the hold, and the request lookup then
// says so. Short job limits make the job an orphan within seconds.

const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

const FUNDS_MICROS = 1_000_000n;

let stack: E2eStack & { processes: ProcessStack };
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

beforeAll(async () => {
  stack = await startProcessesOnKafka({
    GENERATION_JOB_TIMEOUT_MS: "3000",
    GENERATION_ORPHAN_GRACE_MS: "1000",
    BILLING_HOLD_TTL_MS: "10000",
    BILLING_SWEEP_INTERVAL_MS: "1000",
  });
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

describe("an async submit whose generation process is killed after the 202", () => {
  it("is failed by the orphan sweeper: the lookup answers 502 async_image_failed, retryable, and nothing is charged", async () => {
    const { account } = await auth.createAccount({ email: `lost-${randomUUID()}@example.test`, password: "correct horse battery" });
    const accountId = account!.accountId;
    await billing.topUp({ accountId, amountMicros: FUNDS_MICROS, note: "test" });
    const key = (await auth.createKey({ accountId, name: "test" })).secret;

    const accepted = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, prefer: "respond-async" },
      body: JSON.stringify({ model: "beta", prompt: "never finished [sandbox:delay=600000]" }),
    });
    expect(accepted.status).toBe(202);
    const location = accepted.headers.get("location")!;
    await stack.processes.kill("generation");
    await stack.processes.startService("generation");

    let answer: Response | undefined;
    for (let attempt = 0; attempt < 200 && !answer; attempt += 1) {
      const response = await fetch(`${stack.edgeUrl}${location}`, { headers: { authorization: `Bearer ${key}` } });
      if (response.status === 202) await sleep(100);
      else answer = response;
    }
    expect(answer?.status).toBe(502);
    expect(answer!.headers.get("x-should-retry")).toBe("true");
    const { error } = await json(answer!);
    expect(error.code).toBe("async_image_failed");
    expect(error.message).toContain("lost when the service running it stopped; it was not charged");

    const requestId = location.split("/").pop()!;
    let cost = await json(await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`));
    for (let attempt = 0; attempt < 200 && cost.status === "pending"; attempt += 1) {
      await sleep(100);
      cost = await json(await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`));
    }
    expect(cost).toMatchObject({ status: "not_charged", amount_micros: 0 });
    const { balance } = await billing.getBalance({ accountId });
    expect(balance).toMatchObject({ balanceMicros: FUNDS_MICROS, heldMicros: 0n });
  });
});
