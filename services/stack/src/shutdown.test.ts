import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { createLogger } from "@orvado/core";
import { openDb } from "@orvado/db";
import { freshDatabase, usingServer } from "@orvado/testkit";
import { startStack } from "./index.ts";

// npm start's promise: stopping (Ctrl-C/SIGTERM) lets a job in flight finish, answer and be charged.

const dataDir = mkdtempSync(join(tmpdir(), "orvado-shutdown-"));
const database = await freshDatabase();
// PGlite must live on disk here so the charge can be read after the stack has closed it.
const databaseUrl = usingServer() ? database.url : join(dataDir, "pglite");

afterAll(async () => {
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("stopping the stack", () => {
  it("finishes, answers and charges a job that was running when stop was called", async () => {
    const stack = await startStack({
      env: { ORVADO_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, PORT: "0", AUTH_PORT: "0", BILLING_PORT: "0", GENERATION_PORT: "0" },
      logger: createLogger("test", "silent"),
    });
    const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    const { account } = await auth.createAccount({ email: "stop@example.test", password: "long enough pw" });
    await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "t" });
    const { secret } = await auth.createKey({ accountId: account!.accountId, name: "t" });

    const inFlight = fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: "beta", prompt: "slow [sandbox:delay=1500]", response_format: "b64_json" }),
    });
    while (stack.generation.jobs.inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const stopped = stack.stop();
    const response = await inFlight;
    await stopped;
    expect(response.status).toBe(200);
    const requestId = response.headers.get("x-gateway-request-id");

    const db = await openDb(databaseUrl);
    const cost = await db.query<{ settled_by: string; captured_micros: bigint }>(
      "SELECT settled_by, captured_micros FROM billing.cost_records WHERE request_id = $1",
      [requestId],
    );
    const balance = await db.query<{ balance_micros: bigint; held_micros: bigint }>("SELECT balance_micros, held_micros FROM billing.balances WHERE account_id = $1", [account!.accountId]);
    await db.close();
    expect(cost.rows[0]).toEqual({ settled_by: "completed", captured_micros: 20_000n });
    expect(balance.rows[0]).toEqual({ balance_micros: 980_000n, held_micros: 0n });
  });
});
