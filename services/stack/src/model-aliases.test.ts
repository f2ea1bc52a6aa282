import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { runOrvado, startTestStack, type TestStack } from "./harness.ts";

// Model aliases (docs/providers.md#model-aliases) through the whole stack: an app written for
// OpenAI sends model "gpt-image-1" with the openai SDK over HTTP, runs alpha-2.5-flare and is billed
// as alpha-2.5-flare; an Idempotency-Key retry may name the model by either name (plain fetch); the
// CLI (its entry function) makes the accounts and keys and reads the cost over RPC; a models file
// whose alias clashes with another model's name refuses the start.

const dir = mkdtempSync(join(tmpdir(), "orvado-aliases-"));
const sandbox = [{ name: "sandbox", provider: "sandbox", capacity: 8 }];
const MODELS = {
  models: [
    { id: "alpha-2.5-flare", aliases: ["gpt-image-1", "dall-e-3"], family: "alpha", tiers: ["1K", "2K", "4K"], channels: sandbox },
    { id: "beta", family: "beta", tiers: ["1K", "2K"], channels: sandbox },
  ],
};
const ALPHA_FLARE_1K_USD = "0.040000"; // config/prices.json

function writeModels(name: string, models: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(models));
  return path;
}

let stack: TestStack;
const orvado = (...argv: string[]) => runOrvado(stack, ...argv);

beforeAll(async () => {
  stack = await startTestStack({ ORVADO_MODELS_FILE: writeModels("models.json", MODELS) });
});
afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function fundedKey(...keyFlags: string[]): Promise<string> {
  const email = `alias-${Math.random().toString(36).slice(2)}@example.test`;
  const accountId = (await orvado("accounts", "create", "--email", email, "--password", "a long password")).json.account_id;
  await orvado("accounts", "topup", "--account", accountId, "--usd", "5");
  return (await orvado("keys", "create", "--account", accountId, ...keyFlags)).json.key;
}

async function settledCost(requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const cost = await orvado("cost", requestId);
    if (cost.json?.status !== "pending") return cost.json;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });

describe("model aliases over HTTP (openai SDK), RPC and the CLI", () => {
  it("runs model gpt-image-1 as alpha-2.5-flare and bills it as alpha-2.5-flare", async () => {
    const key = await fundedKey();
    const { data, response } = await client(key).images.generate({ model: "gpt-image-1", prompt: "a lighthouse", size: "1024x1024", response_format: "b64_json" }).withResponse();
    expect(data.data).toHaveLength(1);
    const requestId = response.headers.get("x-gateway-request-id")!;
    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ request_id: requestId, status: "charged", model: "alpha-2.5-flare", tier: "1K", amount_usd: ALPHA_FLARE_1K_USD });
    // The job's row and the public cost lookup know the model by its own id too.
    const { rows } = await stack.db.query<{ model: string }>("SELECT model FROM generation.jobs WHERE request_id = $1", [requestId]);
    expect(rows).toEqual([{ model: "alpha-2.5-flare" }]);
    const lookup = (await (await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`)).json()) as { model: string };
    expect(lookup.model).toBe("alpha-2.5-flare");
  });

  it("replays an Idempotency-Key retry naming the model by an alias where the original named its id, and the other way round, charged once", async () => {
    const pairs: [original: string, retry: string][] = [
      ["alpha-2.5-flare", "gpt-image-1"],
      ["dall-e-3", "alpha-2.5-flare"],
    ];
    for (const [original, retry] of pairs) {
      const key = await fundedKey();
      const headers = { "content-type": "application/json", authorization: `Bearer ${key}`, "idempotency-key": `alias-${original}-${retry}` };
      const post = (model: string) =>
        fetch(`${stack.edgeUrl}/v1/images/generations`, { method: "POST", headers, body: JSON.stringify({ model, prompt: "a lighthouse", size: "1024x1024" }) });
      const first = await post(original);
      expect(first.status).toBe(200);
      const again = await post(retry);
      expect(again.status, `${original} then ${retry}`).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      const requestId = first.headers.get("x-gateway-request-id")!;
      expect(again.headers.get("x-gateway-request-id")).toBe(requestId);
      expect(await settledCost(requestId)).toMatchObject({ status: "charged", model: "alpha-2.5-flare", amount_usd: ALPHA_FLARE_1K_USD });
    }
  });

  it("lists canonical ids with their aliases, and retrieves a model by an alias", async () => {
    const openai = client(await fundedKey());
    const listed = [];
    for await (const model of openai.models.list()) listed.push(model);
    expect(listed.map((model) => model.id)).toEqual(["alpha-2.5-flare", "beta"]);
    expect(listed[0]).toMatchObject({ id: "alpha-2.5-flare", aliases: ["gpt-image-1", "dall-e-3"] });
    expect(listed[1]).toMatchObject({ id: "beta", aliases: [] });
    expect(await openai.models.retrieve("dall-e-3")).toMatchObject({ id: "alpha-2.5-flare", object: "model" });
  });

  it("lets a key's allowlist name a model by its id or an alias, and refuses other models", async () => {
    const byAlias = client(await fundedKey("--models", "gpt-image-1"));
    await expect(byAlias.images.generate({ model: "alpha-2.5-flare", prompt: "allowed by alias", response_format: "b64_json" })).resolves.toBeDefined();
    await expect(byAlias.images.generate({ model: "dall-e-3", prompt: "another alias", response_format: "b64_json" })).resolves.toBeDefined();
    const refused = await byAlias.images.generate({ model: "beta", prompt: "not allowed", response_format: "b64_json" }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(403);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe("model_not_allowed");

    const byId = client(await fundedKey("--models", "alpha-2.5-flare"));
    await expect(byId.images.generate({ model: "gpt-image-1", prompt: "allowed by id", response_format: "b64_json" })).resolves.toBeDefined();
  });

  it("refuses to start when an alias clashes with another model's id or alias, naming both", async () => {
    const clash = writeModels("clash.json", {
      models: [
        { id: "alpha-2.5-flare", aliases: ["gpt-image-1"], family: "alpha", tiers: ["1K"], channels: sandbox },
        { id: "beta", aliases: ["gpt-image-1", "alpha-2.5-flare"], family: "beta", tiers: ["1K"], channels: sandbox },
      ],
    });
    await expect(startTestStack({ ORVADO_MODELS_FILE: clash })).rejects.toThrow(
      /alias "gpt-image-1" of model "beta" clashes with alias "gpt-image-1" of model "alpha-2.5-flare".*alias "alpha-2.5-flare" of model "beta" clashes with model id "alpha-2.5-flare"/,
    );
  });
});
