import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { runOrvado, startTestStack, type TestStack } from "./harness.ts";

// The operator's path of issue A: the real `orvado` CLI against the real services.

let stack: TestStack;

const orvado = (...argv: string[]) => runOrvado(stack, ...argv);

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
    // The same account by its email, as an operator usually knows it.
    const byEmail = await orvado("accounts", "show", "--email", "CLI@example.test");
    expect(byEmail.json).toEqual(shown.json);
  });

  it("lists accounts with their balances, and those whose email contains a text", async () => {
    for (const email of ["list-a@shop.test", "list-b@shop.test"]) {
      expect((await orvado("accounts", "create", "--email", email, "--password", "a long password")).code).toBe(0);
    }
    const all = await orvado("accounts", "list");
    expect(all.code).toBe(0);
    expect(all.json.accounts.map((account: { email: string }) => account.email)).toEqual(expect.arrayContaining(["admin@example.test", "list-a@shop.test", "list-b@shop.test"]));
    const shop = await orvado("accounts", "list", "--email", "@SHOP.test");
    expect(shop.json.accounts).toEqual([
      expect.objectContaining({ email: "list-a@shop.test", role: "user", disabled: false, balance_usd: "0.000000" }),
      expect.objectContaining({ email: "list-b@shop.test", role: "user", disabled: false, balance_usd: "0.000000" }),
    ]);
    expect((await orvado("accounts", "list", "--email", "nobody-here")).json).toEqual({ accounts: [] });
    const unknown = await orvado("accounts", "show", "--email", "nobody@shop.test");
    expect(unknown.code).toBe(1);
    expect((await orvado("accounts", "show")).code).toBe(2);
    expect((await orvado("accounts", "show", "--account", "acct_x", "--email", "a@b.test")).code).toBe(2);
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

describe("orvado CLI: billing operations (issue B)", () => {
  it("refuses a top-up for an account that does not exist, crediting nothing", async () => {
    const result = await orvado("accounts", "topup", "--account", "acct_typo", "--usd", "5");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/looking up account acct_typo/);
    const replay = await orvado("ledger", "replay");
    expect(JSON.stringify(replay.json)).not.toContain("acct_typo");
  });

  it("sets a price for new requests, records the change, and lists the history", async () => {
    const set = await orvado("prices", "set", "--model", "beta-2-lite", "--tier", "1k", "--usd", "0.015", "--note", "cost went up");
    expect(set.code).toBe(0);
    expect(set.json.price).toEqual({ model: "beta-2-lite", tier: "1K", usd: "0.015000", micros: "15000" });
    expect(set.json.change).toMatchObject({ old_usd: "0.010000", new_usd: "0.015000", note: "cost went up" });
    expect(set.json.change.actor).toMatch(/^cli:/);
    const history = await orvado("prices", "history", "--model", "beta-2-lite");
    expect(history.json.changes[0]).toMatchObject({ tier: "1K", new_usd: "0.015000" });
    expect(history.json.changes.at(-1)).toMatchObject({ old_usd: null, new_usd: "0.010000", actor: "prices file" });
    expect((await orvado("prices", "set", "--model", "beta", "--tier", "8K", "--usd", "1")).code).toBe(2);
    // Put it back for the other tests in this file.
    await orvado("prices", "set", "--model", "beta-2-lite", "--tier", "1K", "--usd", "0.010000");
  });

  it("refuses a price of 0 without --free, and prices for unknown models or tiers, changing nothing", async () => {
    const before = (await orvado("prices", "list")).json;
    const zero = await orvado("prices", "set", "--model", "beta-2-lite", "--tier", "1K", "--usd", "0");
    expect([zero.code, zero.stderr]).toEqual([2, expect.stringMatching(/--usd 0 makes the model free: add --free/)]);
    const typo = await orvado("prices", "set", "--model", "bta", "--tier", "1K", "--usd", "0.02");
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/Unknown model "bta"/);
    const tier = await orvado("prices", "set", "--model", "beta-2-lite", "--tier", "4K", "--usd", "0.02");
    expect(tier.code).not.toBe(0);
    expect(tier.stderr).toMatch(/beta-2-lite has no 4K tier; its tiers are 1K/);
    expect((await orvado("prices", "list")).json).toEqual(before);

    const free = await orvado("prices", "set", "--model", "beta-2-lite", "--tier", "1K", "--usd", "0", "--free", "--note", "launch week");
    expect([free.code, free.json.price.usd]).toEqual([0, "0.000000"]);
    await orvado("prices", "set", "--model", "beta-2-lite", "--tier", "1K", "--usd", "0.010000");
  });

  it("prints a statement with a running balance as JSON and CSV, and replays the ledger with no difference", async () => {
    const accountId = (await orvado("accounts", "create", "--email", "statement@example.test", "--password", "a long password")).json.account_id;
    await orvado("accounts", "topup", "--account", accountId, "--usd", "2", "--note", "invoice 7, paid");
    await orvado("accounts", "topup", "--account", accountId, "--usd", "0.5", "--note", "=HYPERLINK(\"x\")");
    const key = (await orvado("keys", "create", "--account", accountId)).json.key;
    const client = new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });
    const { response } = await client.images.generate({ model: "beta-2-lite", prompt: "a statement", response_format: "b64_json" }).withResponse();
    const requestId = response.headers.get("x-gateway-request-id")!;
    for (let attempt = 0; (await orvado("cost", requestId)).json.status === "pending" && attempt < 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }

    const json = await orvado("ledger", "statement", "--account", accountId);
    expect(json.code).toBe(0);
    expect(json.json.entries.map((e: { kind: string; balance_after_usd: string }) => [e.kind, e.balance_after_usd])).toEqual([
      ["top_up", "2.000000"],
      ["top_up", "2.500000"],
      ["reserve", "2.500000"],
      ["capture", "2.490000"],
    ]);
    expect(json.json.closing_balance_usd).toBe("2.490000");

    const csv = await runCsv("ledger", "statement", "--account", accountId, "--csv", "--from", new Date().toISOString().slice(0, 10));
    const lines = csv.trimEnd().split("\r\n");
    expect(lines[0]).toBe("entry_id,time,kind,request_id,key_id,amount_usd,balance_after_usd,held_after_usd,reason");
    expect(lines).toHaveLength(5);
    expect(lines[1]).toContain('"invoice 7, paid"');
    // A note that looks like a formula is defused for spreadsheets.
    expect(lines[2]).toContain(`"'=HYPERLINK(""x"")"`);
    expect(lines[4]).toContain(`capture,${requestId}`);

    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const empty = await orvado("ledger", "statement", "--account", accountId, "--from", tomorrow);
    expect(empty.json).toMatchObject({ entries: [], opening_balance_usd: "2.490000" });
    expect((await orvado("ledger", "statement", "--account", accountId, "--from", "2026-02-30")).code).toBe(2);

    const replay = await orvado("ledger", "replay");
    expect(replay.code).toBe(0);
    expect(replay.json).toMatchObject({ result: "projections match the ledger", differences: [] });
  });
});

describe("orvado accounts adjust", () => {
  it("corrects a balance both ways with a required note, recorded in the statement", async () => {
    const accountId = (await orvado("accounts", "create", "--email", "adjust@example.test", "--password", "a long password")).json.account_id;
    await orvado("accounts", "topup", "--account", accountId, "--usd", "1");
    const debit = await orvado("accounts", "adjust", "--account", accountId, "--usd", "-0.25", "--note", "duplicate top-up reversed");
    expect(debit.json).toMatchObject({ balance_usd: "0.750000" });
    expect(debit.json.adjustment_id).toMatch(/^adj_/);
    expect((await orvado("accounts", "adjust", "--account", accountId, "--usd", "0.1", "--note", "goodwill")).json.balance_usd).toBe("0.850000");
    expect((await orvado("accounts", "adjust", "--account", accountId, "--usd", "-0.1")).code).toBe(2);
    expect((await orvado("accounts", "adjust", "--account", accountId, "--usd", "0", "--note", "x")).code).toBe(2);
    expect((await orvado("accounts", "adjust", "--account", "acct_nobody", "--usd", "1", "--note", "x")).code).toBe(1);
    const statement = await orvado("ledger", "statement", "--account", accountId);
    expect(statement.json.entries.map((e: { kind: string; amount_usd: string; reason: string }) => [e.kind, e.amount_usd, e.reason])).toEqual([
      ["top_up", "1.000000", ""],
      ["adjustment", "-0.250000", "duplicate top-up reversed"],
      ["adjustment", "0.100000", "goodwill"],
    ]);
  });
});

async function runCsv(...argv: string[]): Promise<string> {
  const { code, stdout } = await runOrvado(stack, ...argv);
  expect(code).toBe(0);
  return stdout;
}
