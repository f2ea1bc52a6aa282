import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { ProcessStack } from "./process-stack.ts";
import { signedIn, type ConsoleBrowser } from "./console-browser.ts";
import { WebhookReceiver, verified } from "./webhook-receiver.ts";

// At least once across a crash: the services run as separate processes (real HTTP, gRPC and
// PostgreSQL), generation (which sends webhooks) is killed with -9 while its attempts are held
// open by the receiver, and after its restart every delivery arrives again under the same
// webhook-id once the dead process's claims have expired. None is lost.

let database: FreshDatabase;
let dataDir: string;
let stack: ProcessStack;
let receiver: WebhookReceiver;
let user: ConsoleBrowser;
let apiKey: string;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  database = await freshDatabase(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
  dataDir = mkdtempSync(join(tmpdir(), "orvado-webhooks-kill-"));
  stack = await ProcessStack.start({
    databaseUrl: database.url,
    dataDir,
    env: {
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_POLL_MS: "100",
      WEBHOOK_TIMEOUT_MS: "2000",
      WEBHOOK_CLAIM_LEASE_MS: "3000",
    },
  });
  const admin = await signedIn(stack.url("edge"), "admin@example.test", "admin-password-1");
  const created = await admin.call("POST", "/admin/accounts", { body: { email: "kill@example.test", password: "user-password-1", role: "user" } });
  await admin.call("POST", `/admin/accounts/${created.body.account.id}/topup`, { body: { usd: "5", note: "test" } });
  user = await signedIn(stack.url("edge"), "kill@example.test", "user-password-1");
  apiKey = (await user.call("POST", "/keys", { body: { name: "kill" } })).body.secret;
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  await database?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe("webhooks across kill -9 of generation (separate processes)", () => {
  it("delivers every outcome after the restart, duplicates sharing their webhook-id", async () => {
    receiver.answers.set("/held", "hold");
    const endpoint = await user.call("POST", "/webhooks", { body: { url: `${receiver.url}/held` } });
    expect(endpoint.status).toBe(201);
    const requestIds: string[] = [];
    for (const prompt of ["one", "two", "three [sandbox:fail]", "four"]) {
      const response = await fetch(`${stack.url("edge")}/v1/images/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "beta", prompt, size: "1024x1024" }),
      });
      await response.arrayBuffer();
      requestIds.push(response.headers.get("x-request-id")!);
    }
    // Every delivery's first attempt is in flight, held open, when generation dies.
    await receiver.waitFor("/held", requestIds.length);
    await stack.kill("generation");
    receiver.answers.set("/held", 200);
    await stack.startService("generation");

    await receiver.waitFor("/held", requestIds.length * 2, 60_000);
    const byRequest = new Map<string, Set<string>>();
    for (const entry of receiver.on("/held")) {
      const body = verified(endpoint.body.secret, entry);
      const ids = byRequest.get(body.data.id) ?? new Set<string>();
      ids.add(String(entry.headers["webhook-id"]));
      byRequest.set(body.data.id, ids);
    }
    expect([...byRequest.keys()].sort()).toEqual([...requestIds].sort());
    for (const ids of byRequest.values()) expect(ids.size).toBe(1);
    expect(new Set([...byRequest.values()].flatMap((ids) => [...ids])).size).toBe(requestIds.length);

    const deliveries = (await user.call("GET", "/webhooks/deliveries")).body.deliveries;
    for (let wait = 0; deliveries.some((d: { status: string }) => d.status !== "succeeded") && wait < 100; wait += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      deliveries.splice(0, deliveries.length, ...(await user.call("GET", "/webhooks/deliveries")).body.deliveries);
    }
    expect(deliveries.map((d: { status: string }) => d.status)).toEqual(requestIds.map(() => "succeeded"));
  }, 120_000);
});
