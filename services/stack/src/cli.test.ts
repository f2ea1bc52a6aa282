import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { runCli } from "@orvado/cli";
import { startTestStack, type TestStack } from "./harness.ts";

// The operator's path of issue A: the real `orvado` CLI against the real services.

let stack: TestStack;

async function orvado(...argv: string[]): Promise<{ code: number; json: any; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: {
      ORVADO_AUTH_URL: stack.authUrl,
      ORVADO_BILLING_URL: stack.billingUrl,
      ORVADO_DATA_DIR: stack.dataDir,
    },
  });
  return { code, json: stdout ? JSON.parse(stdout) : null, stderr };
}

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("orvado CLI against the running services", () => {
  it("creates an account, tops it up, creates a key that generates, and shows the cost", async () => {
    const created = await orvado("accounts", "create", "--email", "cli@example.test", "--password", "a long password");
    expect(created.code).toBe(0);
    const accountId = created.json.account_id;
    expect(accountId).toMatch(/^acct_/);

    const topped = await orvado("accounts", "topup", "--account", accountId, "--usd", "5", "--note", "first top-up");
    expect(topped.json).toMatchObject({ balance_usd: "5.000000", available_usd: "5.000000" });

    const key = await orvado("keys", "create", "--account", accountId, "--name", "ci");
    expect(key.json.key).toMatch(/^td-[0-9A-Za-z]{43,}$/);

    const client = new OpenAI({ apiKey: key.json.key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });
    const { response } = await client.images.generate({ model: "alpha-2.5-flare", prompt: "a kite", quality: "low", response_format: "b64_json" }).withResponse();
    const requestId = response.headers.get("x-gateway-request-id")!;

    let cost = await orvado("cost", requestId);
    for (let attempt = 0; cost.json.status === "pending" && attempt < 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      cost = await orvado("cost", requestId);
    }
    expect(cost.json).toMatchObject({ request_id: requestId, status: "charged", model: "alpha-2.5-flare", tier: "1K", amount_usd: "0.040000" });

    const shown = await orvado("accounts", "show", "--account", accountId);
    expect(shown.json).toMatchObject({ email: "cli@example.test", balance_usd: "4.960000", held_usd: "0.000000", available_usd: "4.960000" });
  });

  it("lists the example prices", async () => {
    const prices = await orvado("prices", "list");
    expect(prices.json.prices).toContainEqual({ model: "beta-2-lite", tier: "1K", usd: "0.010000", micros: "10000" });
    expect(prices.json.prices.filter((price: { model: string }) => price.model === "beta-2-lite")).toHaveLength(1);
  });

  it("exits 2 on bad arguments and 1 on an unknown account", async () => {
    expect((await orvado("accounts", "topup", "--account", "acct_x", "--usd", "-1")).code).toBe(2);
    const unknown = await orvado("accounts", "show", "--account", "acct_nobody");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not found|no account/i);
  });
});
