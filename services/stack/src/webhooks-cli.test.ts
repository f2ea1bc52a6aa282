import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOrvado, startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn } from "./console-browser.ts";
import { WebhookReceiver } from "./webhook-receiver.ts";

// The operator's `orvado webhooks` commands against the running services (in-process stack,
// Connect RPC to auth and generation), and the endpoint URL check as it stands by default:
// without WEBHOOK_ALLOW_PRIVATE_URLS a loopback or private address is refused, by the CLI
// and by the console API (400 in the error shape). A public IP literal needs no DNS here.

let stack: TestStack;
const orvado = (...argv: string[]) => runOrvado(stack, ...argv);
const PUBLIC_URL = "https://93.184.215.14/hooks/orvado";

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("orvado webhooks", () => {
  it("creates, lists and deletes an account's endpoints, printing the secret once", async () => {
    const account = (await orvado("accounts", "create", "--email", "hooks-cli@example.test", "--password", "a long password")).json.account_id;
    const created = await orvado("webhooks", "create", "--account", account, "--url", PUBLIC_URL, "--events", "image.generation.failed");
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ id: expect.stringMatching(/^whep_/), account_id: account, url: PUBLIC_URL, events: ["image.generation.failed"] });
    expect(created.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const both = await orvado("webhooks", "create", "--account", account, "--url", `${PUBLIC_URL}/2`);
    expect(both.json.events).toEqual(["image.generation.succeeded", "image.generation.failed"]);

    const listed = await orvado("webhooks", "list", "--account", account);
    expect(listed.json.endpoints.map((endpoint: { id: string }) => endpoint.id).sort()).toEqual([created.json.id, both.json.id].sort());
    expect(listed.stdout).not.toContain(created.json.secret);

    const deleted = await orvado("webhooks", "delete", "--id", created.json.id);
    expect(deleted.json.deleted.id).toBe(created.json.id);
    expect((await orvado("webhooks", "list", "--account", account)).json.endpoints.map((endpoint: { id: string }) => endpoint.id)).toEqual([both.json.id]);
    const again = await orvado("webhooks", "delete", "--id", created.json.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no such webhook endpoint");
  });

  it("refuses a private URL, credentials, another scheme, an unknown event and an unknown account", async () => {
    const account = (await orvado("accounts", "create", "--email", "hooks-cli-2@example.test", "--password", "a long password")).json.account_id;
    for (const url of ["http://127.0.0.1:9/hook", "http://localhost/hook", "https://10.1.2.3/hook", "http://[::1]/hook", "http://169.254.169.254/latest"]) {
      const refused = await orvado("webhooks", "create", "--account", account, "--url", url);
      expect([url, refused.code]).toEqual([url, 1]);
      expect(refused.stderr).toMatch(/internal address/);
    }
    expect((await orvado("webhooks", "create", "--account", account, "--url", "https://me:pw@93.184.215.14/")).stderr).toContain("credentials");
    expect((await orvado("webhooks", "create", "--account", account, "--url", "ftp://93.184.215.14/")).stderr).toContain("https or http");
    expect((await orvado("webhooks", "create", "--account", account, "--url", PUBLIC_URL, "--events", "image.edit.done")).stderr).toContain("not an event type");
    expect((await orvado("webhooks", "create", "--account", "acct_nobody", "--url", PUBLIC_URL)).code).toBe(1);
    expect((await orvado("webhooks", "create", "--account", account)).code).toBe(2);
    expect((await orvado("webhooks", "list", "--account", account)).json.endpoints).toEqual([]);
  });

  it("refuses a private URL through the console API with 400 invalid_field", async () => {
    const browser = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
    const answer = await browser.call("POST", "/webhooks", { body: { url: "http://127.0.0.1:8080/hook" } });
    expect([answer.status, answer.body.error.code, answer.body.error.type]).toEqual([400, "invalid_field", "gateway_error"]);
    expect(answer.body.error.message).toContain("internal address 127.0.0.1");
    expect((await browser.call("POST", "/webhooks", { body: { url: PUBLIC_URL } })).status).toBe(201);
  });

  it("checks the address again when connecting: an endpoint whose name now resolves to a private address gets nothing", async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const browser = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
      const me = (await browser.call("GET", "/me")).body.account.id as string;
      await browser.call("POST", `/admin/accounts/${me}/topup`, { body: { usd: "1", note: "test" } });
      const apiKey = (await browser.call("POST", "/keys", { body: { name: "rebinding" } })).body.secret;
      const created = await browser.call("POST", "/webhooks", { body: { url: `${PUBLIC_URL}/rebound` } });
      // As after DNS rebinding: the stored endpoint now leads to this machine's loopback address.
      await stack.db.query("UPDATE generation.webhook_endpoints SET url = $2 WHERE endpoint_id = $1", [created.body.endpoint.id, `${receiver.url}/rebound`]);
      const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "beta", prompt: "a rebound", size: "1024x1024" }),
      });
      expect(response.status).toBe(200);
      let attempts: { statusCode: number | null; error: string }[] = [];
      for (let wait = 0; attempts.length === 0 && wait < 200; wait += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const [delivery] = (await browser.call("GET", `/webhooks/deliveries?endpointId=${created.body.endpoint.id}`)).body.deliveries;
        attempts = delivery?.attempts ?? [];
      }
      expect(attempts[0]).toMatchObject({ statusCode: null, error: expect.stringContaining("internal address 127.0.0.1") });
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
