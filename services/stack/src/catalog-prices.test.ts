import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOrvado, startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn } from "./console-browser.ts";

// Where the catalog meets the price list: a models file offering a tier that billing has no
// price for refuses generation's start (asked over RPC at start), naming the model, the tier
// and the commands that fix it; `orvado prices set --create` (the CLI's entry function, over RPC)
// and the console's new-price form (HTTP) give it one, and then the same start succeeds on that
// database. On PostgreSQL when TEST_DATABASE_URL is set.

const dir = mkdtempSync(join(tmpdir(), "orvado-catalog-prices-"));
const sandbox = [{ name: "sandbox", provider: "sandbox", capacity: 4 }];
const withNewModel = join(dir, "models.json");
writeFileSync(
  withNewModel,
  JSON.stringify({
    models: [
      { id: "beta", family: "beta", tiers: ["1K", "2K"], channels: sandbox },
      { id: "flux-local", family: "beta", tiers: ["1K", "2K"], channels: sandbox },
      // config/prices.json prices beta-2-lite at 1K only.
      { id: "beta-2-lite", family: "beta", tiers: ["1K", "4K"], channels: sandbox },
    ],
  }),
);

let stack: TestStack;
const orvado = (...argv: string[]) => runOrvado(stack, ...argv);

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a models file tier without a price (RPC at start, CLI, HTTP console)", () => {
  it("refuses the start naming each model and tier and the command that prices it", async () => {
    const refused = await startTestStack({ ORVADO_MODELS_FILE: withNewModel }, { databaseUrl: stack.databaseUrl }).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    const message = (refused as Error).message;
    expect(message).toContain('model "flux-local" offers the 1K tier, which has no price');
    expect(message).toContain('model "flux-local" offers the 2K tier, which has no price');
    expect(message).toContain('model "beta-2-lite" offers the 4K tier, which has no price');
    expect(message).not.toContain('model "beta" offers');
    expect(message).toContain("npx orvado prices set --create --model flux-local --tier 2K --usd <USD per image>");
    expect(message).toContain("npx orvado prices set --create --model beta-2-lite --tier 4K --usd <USD per image>");
    expect(message).toContain('"flux-local": { "1K": "<USD per image>", "2K": "<USD per image>" }');
  });

  it("keeps a missing price an error without --create, and --create gives it its first price", async () => {
    const plain = await orvado("prices", "set", "--model", "flux-local", "--tier", "1K", "--usd", "0.03");
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/Unknown model "flux-local".*--create/);
    const created = await orvado("prices", "set", "--create", "--model", "flux-local", "--tier", "1K", "--usd", "0.03", "--note", "new GPU box");
    expect(created.code).toBe(0);
    expect(created.json.price).toEqual({ model: "flux-local", tier: "1K", usd: "0.030000", micros: "30000" });
    expect(created.json.change).toMatchObject({ old_usd: null, new_usd: "0.030000", note: "new GPU box" });
    const tier = await orvado("prices", "set", "--create", "--model", "beta-2-lite", "--tier", "4K", "--usd", "0.2");
    expect(tier.code).toBe(0);
  });

  it("gives a price from the console's new-price form (create), and refuses it without create", async () => {
    const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
    const plain = await admin.call("PUT", "/admin/prices", { body: { model: "flux-local", tier: "2K", usd: "0.06" } });
    expect([plain.status, plain.body.error.code]).toEqual([400, "invalid_field"]);
    const created = await admin.call("PUT", "/admin/prices", { body: { model: "flux-local", tier: "2K", usd: "0.06", create: true, note: "console" } });
    expect(created.status).toBe(200);
    expect(created.body.price).toEqual({ model: "flux-local", tier: "2K", usd: "0.060000", micros: 60000 });
    expect(created.body.change).toMatchObject({ oldUsd: null, newUsd: "0.060000", actor: TEST_ADMIN.email });
  });

  it("starts once every tier has a price, and serves the new model", async () => {
    const replica = await startTestStack({ ORVADO_MODELS_FILE: withNewModel }, { databaseUrl: stack.databaseUrl });
    try {
      const { json } = await runOrvado(replica, "prices", "list");
      expect(json.prices).toEqual(expect.arrayContaining([expect.objectContaining({ model: "flux-local", tier: "2K", usd: "0.060000" })]));
      const models = (await (await fetch(`${replica.edgeUrl}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((model) => model.id)).toContain("flux-local");
    } finally {
      await replica.close();
    }
  });
});
