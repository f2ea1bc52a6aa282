import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import sharp from "sharp";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn, type ConsoleBrowser } from "./console-browser.ts";
import { openApiViolations, validatingFetch } from "./openapi-validation.ts";

// Issue I items 2 and 3 over real HTTP with the official openai SDK: the OpenAI fields
// real clients send (user, output_format, output_compression, background, moderation)
// and models.retrieve. The stack's services talk gRPC; PostgreSQL when TEST_DATABASE_URL
// is set; one model's channel is the OpenAI protocol simulator on 127.0.0.1, so what is
// passed on to a provider is read from the request the simulator received.

// Every response this suite receives is checked against the OpenAPI document (openapi-validation.ts).
const fetch = validatingFetch();
afterEach(() => {
  expect(openApiViolations.splice(0)).toEqual([]);
});

let stack: TestStack;
let admin: ConsoleBrowser;
let openai: Simulator;
let modelsDir: string;
const SIM_KEY = "sk-openai-fields";

function modelsFile(): string {
  const sandbox = [{ name: "sandbox", provider: "sandbox", capacity: 16 }];
  const openAiChannel = { name: "openai-main", provider: "openai", upstreamModel: "gpt-image-1", baseUrl: openai.baseUrl, apiKeyEnv: "SIM_OPENAI_KEY", capacity: 8 };
  const models = {
    models: [
      { id: "alpha-2.5-flare", family: "alpha", tiers: ["1K", "2K"], channels: [openAiChannel] },
      // A second channel whose provider has no background setting: the model cannot promise it.
      { id: "alpha-2.5-sunburst", family: "alpha", tiers: ["1K"], channels: [openAiChannel, { name: "sandbox", provider: "sandbox", capacity: 4, priority: 50 }] },
      { id: "beta", family: "beta", tiers: ["1K", "2K"], channels: sandbox },
    ],
  };
  const path = join(modelsDir, "models.json");
  writeFileSync(path, JSON.stringify(models));
  return path;
}

let counter = 0;
/** A user account made through the admin API, topped up, with an API key and a console session. */
async function newUser() {
  counter += 1;
  const email = `fields-${counter}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const password = "user-password-1";
  const created = await admin.call("POST", "/admin/accounts", { body: { email, password, role: "user" } });
  const id = created.body.account.id as string;
  await admin.call("POST", `/admin/accounts/${id}/topup`, { body: { usd: "5.00", note: "test" } });
  const browser = await signedIn(stack.edgeUrl, email, password);
  const key = await browser.call("POST", "/keys", { body: { name: "fields" } });
  return { browser, key: key.body.secret as string };
}

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0, fetch });

const post = (key: string, body: Record<string, unknown>) =>
  fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();

async function settledRow(browser: ConsoleBrowser, requestId: string) {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const answer = await browser.call("GET", `/usage/${requestId}`);
    if (answer.status === 200 && answer.body.status !== "pending") return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${requestId} stayed pending`);
}

beforeAll(async () => {
  openai = await startSimulator("openai", { behaviour: { apiKey: SIM_KEY } });
  modelsDir = mkdtempSync(join(tmpdir(), "orvado-fields-"));
  stack = await startTestStack({ SIM_OPENAI_KEY: SIM_KEY, ORVADO_MODELS_FILE: modelsFile(), GENERATION_ALLOW_PRIVATE_UPSTREAMS: "1" });
  admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  rmSync(modelsDir, { recursive: true, force: true });
});
beforeEach(() => openai.reset());

describe("GET /v1/models/{id} (models.retrieve)", () => {
  it("answers one model in OpenAI's model object shape", async () => {
    const { key } = await newUser();
    const model = await sdk(key).models.retrieve("beta");
    expect(model).toMatchObject({ id: "beta", object: "model", owned_by: "orvado-sandbox", family: "beta", tiers: ["1K", "2K"] });
    expect(Number.isInteger(model.created)).toBe(true);
    const listed = (await sdk(key).models.list()).data.find((entry) => entry.id === "beta");
    expect(model).toEqual(listed);
  });

  it("is a 404 in the documented error shape for an unknown id, Object.prototype's names included", async () => {
    const { key } = await newUser();
    await expect(sdk(key).models.retrieve("no-such-model")).rejects.toMatchObject({ status: 404 });
    for (const id of ["constructor", "__proto__", "toString"]) {
      const response = await fetch(`${stack.edgeUrl}/v1/models/${id}`);
      expect(response.status).toBe(404);
      expect((await json(response)).error).toMatchObject({ code: "not_found", type: "gateway_error" });
    }
  });
});

describe("output_format and output_compression", () => {
  it("converts to webp: the SDK's b64_json and the served file are WebP of the requested size", async () => {
    const { key } = await newUser();
    const b64 = await sdk(key).images.generate({ model: "beta", prompt: "a green field", size: "1536x1024", output_format: "webp", response_format: "b64_json" });
    const fromB64 = await sharp(Buffer.from(b64.data![0]!.b64_json!, "base64")).metadata();
    expect([fromB64.format, fromB64.width, fromB64.height]).toEqual(["webp", 1536, 1024]);

    const linked = await sdk(key).images.generate({ model: "beta", prompt: "a green field", output_format: "webp" });
    const url = linked.data![0]!.url!;
    expect(new URL(url).pathname).toMatch(/^\/v1\/files\/img_[A-Za-z0-9_-]+\.webp$/);
    const file = await fetch(url);
    expect(file.headers.get("content-type")).toBe("image/webp");
    const served = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
    expect([served.format, served.width, served.height]).toEqual(["webp", 1024, 1024]);

    // The request lookup links the same stored WebP.
    const requestId = (await sdk(key).images.generate({ model: "beta", prompt: "looked up later", output_format: "webp" }).withResponse()).response.headers.get("x-gateway-request-id");
    const lookup = await fetch(`${stack.edgeUrl}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(lookup.status).toBe(200);
    expect(new URL((await json(lookup)).data[0].url).pathname).toMatch(/\.webp$/);
  });

  it("converts to jpeg, and a lower output_compression gives a smaller file", async () => {
    const { key } = await newUser();
    const sizes: number[] = [];
    for (const output_compression of [100, 10]) {
      const answer = await sdk(key).images.generate({ model: "beta", prompt: "a busy market street", output_format: "jpeg", output_compression, response_format: "b64_json" });
      const bytes = Buffer.from(answer.data![0]!.b64_json!, "base64");
      expect((await sharp(bytes).metadata()).format).toBe("jpeg");
      sizes.push(bytes.length);
    }
    expect(sizes[1]).toBeLessThan(sizes[0]!);
  });

  it("converts what an upstream returned (the OpenAI simulator answers PNG) and asks it for no format of its own", async () => {
    const { key } = await newUser();
    const answer = await sdk(key).images.generate({ model: "alpha-2.5-flare", prompt: "a kite", output_format: "jpeg", response_format: "b64_json" });
    expect((await sharp(Buffer.from(answer.data![0]!.b64_json!, "base64")).metadata()).format).toBe("jpeg");
    expect(openai.stats.lastBody).not.toHaveProperty("output_format");
  });

  it("the console playground takes output_format too", async () => {
    const { browser } = await newUser();
    const answer = await browser.call("POST", "/playground", { body: { model: "beta", prompt: "from the console", output_format: "webp" } });
    expect(answer.status).toBe(200);
    const file = await fetch(answer.body.data[0].url);
    expect(file.headers.get("content-type")).toBe("image/webp");
    expect((await sharp(Buffer.from(await file.arrayBuffer())).metadata()).format).toBe("webp");
  });

  it("png stays the default and its links end in .png", async () => {
    const { key } = await newUser();
    const answer = await sdk(key).images.generate({ model: "beta", prompt: "a plain default" });
    const file = await fetch(answer.data![0]!.url!);
    expect(new URL(answer.data![0]!.url!).pathname).toMatch(/\.png$/);
    expect(file.headers.get("content-type")).toBe("image/png");
  });

  it("refuses what cannot be encoded, 400 naming the field, nothing charged", async () => {
    const { key } = await newUser();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ output_format: "gif" }, /output_format must be one of png, jpeg, webp/],
      [{ output_format: "jpeg", output_compression: 101 }, /output_compression must be an integer from 0 to 100/],
      [{ output_format: "webp", output_compression: 1.5 }, /output_compression/],
      [{ output_compression: 50 }, /jpeg or webp only, not png/],
      [{ output_format: "jpeg", background: "transparent", model: "alpha-2.5-flare" }, /jpeg has no transparency/],
      [{ output_format: "constructor" }, /output_format/],
    ];
    for (const [fields, message] of cases) {
      const response = await post(key, { model: "beta", prompt: "x", ...fields });
      expect(response.status).toBe(400);
      expect((await json(response)).error).toMatchObject({ code: "invalid_field", message: expect.stringMatching(message) });
    }
  });
});

describe("background and moderation", () => {
  it("are passed on to a provider that takes them (OpenAI), as sent", async () => {
    const { key } = await newUser();
    await sdk(key).images.generate({ model: "alpha-2.5-flare", prompt: "a logo", background: "transparent", moderation: "low" });
    expect(openai.stats.lastBody).toMatchObject({ background: "transparent", moderation: "low" });
  });

  it("are not sent to the provider when the client did not send them", async () => {
    const { key } = await newUser();
    await sdk(key).images.generate({ model: "alpha-2.5-flare", prompt: "a logo" });
    expect(openai.stats.lastBody).not.toHaveProperty("background");
    expect(openai.stats.lastBody).not.toHaveProperty("moderation");
  });

  it("are a 400 naming the model when any of its channels' providers has no such setting", async () => {
    const { key } = await newUser();
    for (const [model, field, value] of [["beta", "background", "opaque"], ["beta", "moderation", "low"], ["alpha-2.5-sunburst", "background", "auto"]] as const) {
      const response = await post(key, { model, prompt: "x", [field]: value });
      expect(response.status).toBe(400);
      const { error } = await json(response);
      expect(error.code).toBe("invalid_field");
      expect(error.message).toContain(`The model ${model} does not take ${field}`);
      expect(error.message).toContain("sandbox");
    }
    expect(openai.count("generate")).toBe(0);
  });

  it("refuse values outside OpenAI's sets", async () => {
    const { key } = await newUser();
    for (const fields of [{ background: "green" }, { moderation: "none" }, { background: 1 }]) {
      const response = await post(key, { model: "alpha-2.5-flare", prompt: "x", ...fields });
      expect(response.status).toBe(400);
      expect((await json(response)).error.code).toBe("invalid_field");
    }
  });
});

describe("user", () => {
  it("is stored with the cost record: shown in the console's usage, its detail and CSV, and filterable", async () => {
    const { key, browser } = await newUser();
    const tagged = await sdk(key).images.generate({ model: "beta", prompt: "for user one", output_format: "webp", user: "end-user-42" }).withResponse();
    const untagged = await sdk(key).images.generate({ model: "beta", prompt: "for nobody" }).withResponse();
    const taggedId = tagged.response.headers.get("x-gateway-request-id")!;
    const untaggedId = untagged.response.headers.get("x-gateway-request-id")!;
    expect((await settledRow(browser, taggedId)).user).toBe("end-user-42");
    expect((await settledRow(browser, untaggedId)).user).toBeNull();

    const all = await browser.call("GET", "/usage");
    expect(all.body.requests.map((row: { requestId: string }) => row.requestId)).toEqual([untaggedId, taggedId]);
    const filtered = await browser.call("GET", "/usage?user=end-user-42");
    expect(filtered.body.requests.map((row: { requestId: string; user: string }) => [row.requestId, row.user])).toEqual([[taggedId, "end-user-42"]]);
    expect((await browser.call("GET", "/usage?user=someone-else")).body.requests).toEqual([]);

    const csv = await browser.call("GET", "/usage.csv?user=end-user-42");
    const [header, row, ...rest] = csv.text.trim().split("\r\n");
    expect(header!.split(",").at(-1)).toBe("user");
    expect(row!.startsWith(taggedId)).toBe(true);
    expect(row!.split(",").at(-1)).toBe("end-user-42");
    expect(rest).toEqual([]);
  });

  it("is a label only one account sees: another account filtering by it finds nothing", async () => {
    const first = await newUser();
    const second = await newUser();
    await sdk(first.key).images.generate({ model: "beta", prompt: "mine", user: "shared-label" });
    expect((await second.browser.call("GET", "/usage?user=shared-label")).body.requests).toEqual([]);
  });

  it("a spreadsheet formula in user is defused in the CSV", async () => {
    const { key, browser } = await newUser();
    const { response } = await sdk(key).images.generate({ model: "beta", prompt: "formula", user: "=HYPERLINK(1)" }).withResponse();
    await settledRow(browser, response.headers.get("x-gateway-request-id")!);
    const csv = await browser.call("GET", "/usage.csv");
    expect(csv.text).toContain(`,'=HYPERLINK(1)\r\n`);
  });

  it("refuses an empty, over-long, non-string or control-character user, 400, nothing charged", async () => {
    const { key, browser } = await newUser();
    for (const user of ["", "u".repeat(257), 7, "line\nbreak", "bell\u0007"]) {
      const response = await post(key, { model: "beta", prompt: "x", user });
      expect(response.status).toBe(400);
      expect((await json(response)).error).toMatchObject({ code: "invalid_field", message: expect.stringContaining("user must be") });
    }
    expect((await post(key, { model: "beta", prompt: "x", user: "u".repeat(256) })).status).toBe(200);
    expect((await browser.call("GET", "/usage")).body.requests).toHaveLength(1);
  });

  it("takes part in the Idempotency-Key's body: the same key with another user is a reuse", async () => {
    const { key } = await newUser();
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": "fields-idem-1" };
    const send = (user: string) => fetch(`${stack.edgeUrl}/v1/images/generations`, { method: "POST", headers, body: JSON.stringify({ model: "beta", prompt: "x", user }) });
    expect((await send("a")).status).toBe(200);
    const reused = await send("b");
    expect(reused.status).toBe(409);
    expect((await json(reused)).error.code).toBe("idempotency_key_reused");
  });
});

describe("unknown fields", () => {
  it("stay a 400 unknown_field, the new fields listed as supported", async () => {
    const { key } = await newUser();
    const response = await post(key, { model: "beta", prompt: "x", style: "vivid" });
    expect(response.status).toBe(400);
    const { error } = await json(response);
    expect(error.code).toBe("unknown_field");
    expect(error.message).toContain("user, output_format, output_compression, background, moderation");
  });
});
