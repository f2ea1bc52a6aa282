import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI, { toFile } from "openai";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";

// POST /v1/images/edits end to end (issue 24, item 1): the official openai SDK's
// images.edit (multipart) against the edge over HTTP, the images carried to generation
// over gRPC (separate processes in the kafka project), the sandbox editing, billing
// charging from the event stream, and the public cost lookup showing the charge.

let stack: E2eStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

const FLARE_1K_MICROS = 40_000n; // config/prices.json: alpha-2.5-flare 1K = $0.04
// Bounds lowered for this stack so the tests can cross them with small files.
const MAX_IMAGES = 3;
const MAX_FILE_BYTES = 200_000;

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = (response: Response): Promise<any> => response.json();
const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${stack.edgeUrl}/v1`, maxRetries: 0 });

async function newFundedKey(usd: bigint): Promise<{ accountId: string; key: string }> {
  const email = `edit-${Math.random().toString(36).slice(2)}@example.test`;
  const { account } = await auth.createAccount({ email, password: "correct horse battery" });
  if (usd > 0n) await billing.topUp({ accountId: account!.accountId, amountMicros: usd * 1_000_000n, note: "test" });
  const created = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, key: created.secret };
}

const available = async (accountId: string) => (await billing.getBalance({ accountId })).balance!.availableMicros;

async function settledCost(requestId: string) {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const body = await json(await fetch(`${stack.edgeUrl}/api/cost/request/${requestId}`));
    if (body.status !== "pending") return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

const solidPng = (width: number, height: number, rgb: [number, number, number]) =>
  sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer();

/** Transparent (edit here) on the left half, opaque (keep) on the right. */
const leftHalfMask = (width: number, height: number) => {
  const pixels = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) pixels[(y * width + x) * 4 + 3] = x < width / 2 ? 0 : 255;
  return sharp(pixels, { raw: { width, height, channels: 4 } }).png().toBuffer();
};

async function pixel(png: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const offset = (y * info.width + x) * info.channels;
  return [...data.subarray(offset, offset + 3)];
}

const decoded = (result: OpenAI.ImagesResponse, index = 0) => Buffer.from(result.data![index]!.b64_json!, "base64");

/** A multipart edit sent by hand, for what the SDK never sends. */
function postForm(key: string, parts: Array<[string, string | Blob, string?]>, headers: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, filename ?? "file.png");
  }
  return fetch(`${stack.edgeUrl}/v1/images/edits`, { method: "POST", headers: { authorization: `Bearer ${key}`, ...headers }, body: form });
}

const pngBlob = (bytes: Buffer) => new Blob([new Uint8Array(bytes)], { type: "image/png" });

beforeAll(async () => {
  stack = await startE2eStack({ EDGE_EDIT_MAX_IMAGES: String(MAX_IMAGES), EDGE_EDIT_MAX_FILE_BYTES: String(MAX_FILE_BYTES) });
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

describe(`image edits with the openai SDK (${process.env.ORVADO_TEST_STREAM ?? "postgres"} stream)`, () => {
  it("edits one image: the input inverted at the requested size, marked as sandbox output, charged as a 1K generation", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const before = await available(accountId);
    const image = await toFile(await solidPng(120, 80, [220, 30, 40]), "red.png", { type: "image/png" });
    const { data: result, response } = await sdk(key)
      .images.edit({ model: "alpha-2.5-flare", image, prompt: "make it cyan", size: "768x512", response_format: "b64_json" })
      .withResponse();
    const requestId = response.headers.get("x-gateway-request-id")!;
    const png = decoded(result);
    const meta = await sharp(png).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 768, 512]);
    expect(await pixel(png, 384, 200)).toEqual([35, 225, 215]);
    // The sandbox's checker band along the bottom edge, as on generated sandbox images.
    expect(await pixel(png, 2, 485)).toEqual([250, 204, 21]);
    expect(meta.exif?.toString("latin1")).toContain("Orvado sandbox");
    const cost = await settledCost(requestId);
    expect(cost).toMatchObject({ request_id: requestId, status: "charged", model: "alpha-2.5-flare", size: "768x512", tier: "1K", amount_micros: Number(FLARE_1K_MICROS), images_delivered: 1 });
    expect(before - (await available(accountId))).toBe(FLARE_1K_MICROS);
  });

  it("edits with a mask: the transparent half is the prompt's picture, the opaque half keeps the input; a url answer serves it", async () => {
    const { key } = await newFundedKey(5n);
    const client = sdk(key);
    const image = await toFile(await solidPng(64, 64, [10, 200, 30]), "green.png", { type: "image/png" });
    const mask = await toFile(await leftHalfMask(64, 64), "mask.png", { type: "image/png" });
    const edited = await client.images.edit({ model: "alpha-2.5-sunburst", image, mask, prompt: "a moon over the sea", size: "256x256" });
    const png = Buffer.from(await (await fetch(edited.data![0]!.url!)).arrayBuffer());
    expect(await pixel(png, 200, 100)).toEqual([10, 200, 30]);
    // The same prompt generated at the same size is the sandbox picture the mask's area shows.
    const generated = await client.images.generate({ model: "beta", prompt: "a moon over the sea", size: "256x256", response_format: "b64_json" });
    expect(await pixel(png, 40, 100)).toEqual(await pixel(decoded(generated), 40, 100));
  });

  it("edits several images (image[]): the first inverted, the others as thumbnails along the top; n=2 is charged twice", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const before = await available(accountId);
    const images = await Promise.all([
      toFile(await solidPng(100, 100, [200, 0, 0]), "a.png", { type: "image/png" }),
      toFile(await solidPng(100, 100, [0, 0, 200]), "b.png", { type: "image/png" }),
      toFile(await solidPng(100, 100, [0, 180, 0]), "c.png", { type: "image/png" }),
    ]);
    const { data: result, response } = await sdk(key)
      .images.edit({ model: "alpha-2.5-flare", image: images, prompt: "combine them", size: "500x500", n: 2, response_format: "b64_json" })
      .withResponse();
    expect(result.data).toHaveLength(2);
    const png = decoded(result);
    expect(await pixel(png, 250, 250)).toEqual([55, 255, 255]);
    expect(await pixel(png, 50, 50)).toEqual([0, 0, 200]);
    expect(await pixel(png, 150, 50)).toEqual([0, 180, 0]);
    // The second variant differs from the first (hue-rotated), deterministically.
    expect(await pixel(decoded(result, 1), 250, 250)).not.toEqual([55, 255, 255]);
    const cost = await settledCost(response.headers.get("x-gateway-request-id")!);
    expect(cost).toMatchObject({ status: "charged", images_delivered: 2, amount_micros: Number(2n * FLARE_1K_MICROS) });
    expect(before - (await available(accountId))).toBe(2n * FLARE_1K_MICROS);
  });

  it("takes OpenAI's output fields as multipart text: webp with output_compression, and the user shown in usage", async () => {
    const { key } = await newFundedKey(1n);
    const image = await toFile(await solidPng(40, 40, [200, 100, 0]), "o.png", { type: "image/png" });
    const edited = await sdk(key).images.edit({
      model: "alpha-2.5-flare",
      image,
      prompt: "as webp",
      size: "256x256",
      response_format: "b64_json",
      output_format: "webp",
      output_compression: 40,
      user: "editor-7",
    });
    const meta = await sharp(decoded(edited)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["webp", 256, 256]);
  });

  it("is deterministic: the same edit twice gives the same bytes", async () => {
    const { key } = await newFundedKey(5n);
    const edit = async () =>
      decoded(await sdk(key).images.edit({ model: "alpha-2.5-flare", image: await toFile(await solidPng(50, 50, [90, 90, 200]), "x.png", { type: "image/png" }), prompt: "same", size: "128x128", response_format: "b64_json" }));
    expect((await edit()).equals(await edit())).toBe(true);
  });

  it("answers an Idempotency-Key retry with the original edit, charged once; another image under the key is a 409", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const before = await available(accountId);
    const image = await solidPng(40, 40, [1, 2, 3]);
    const send = (bytes: Buffer) => postForm(key, [["model", "alpha-2.5-flare"], ["prompt", "again"], ["size", "256x256"], ["image", pngBlob(bytes)]], { "idempotency-key": "edit-once-1" });
    const first = await send(image);
    expect(first.status).toBe(200);
    const retry = await send(image);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("x-gateway-request-id")).toBe(first.headers.get("x-gateway-request-id"));
    const other = await send(await solidPng(40, 40, [9, 9, 9]));
    expect(other.status).toBe(409);
    expect((await json(other)).error.code).toBe("idempotency_key_reused");
    await settledCost(first.headers.get("x-gateway-request-id")!);
    expect(before - (await available(accountId))).toBe(FLARE_1K_MICROS);
  });
});

describe("edits refused", () => {
  it("a model that does not edit is 400 edits_not_available, multipart (the SDK) or JSON, and nothing is charged", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const before = await available(accountId);
    const image = await toFile(await solidPng(32, 32, [5, 5, 5]), "x.png", { type: "image/png" });
    const error = await sdk(key).images.edit({ model: "beta", image, prompt: "x" }).then(
      () => null,
      (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error?.error).toMatchObject({ type: "gateway_error", code: "edits_not_available" });
    expect(error?.message).toMatch(/\(request id: req_/);
    const asJson = await fetch(`${stack.edgeUrl}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta-2-lite", prompt: "x" }),
    });
    expect(asJson.status).toBe(400);
    expect((await json(asJson)).error.code).toBe("edits_not_available");
    // A model that edits, sent as JSON: the body's type is what is wrong.
    const editingAsJson = await fetch(`${stack.edgeUrl}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "alpha-2.5-flare", prompt: "x" }),
    });
    expect(editingAsJson.status).toBe(415);
    expect((await json(editingAsJson)).error.code).toBe("unsupported_media_type");
    expect(await available(accountId)).toBe(before);
  });

  it("lists which models edit in /v1/models: the alpha models do, the beta models do not", async () => {
    const models = await json(await fetch(`${stack.edgeUrl}/v1/models`));
    const edits = Object.fromEntries(models.data.map((model: { id: string; edits: boolean }) => [model.id, model.edits]));
    expect(edits).toEqual({ "alpha-2.5-flare": true, "alpha-2.5-sunburst": true, "beta-pro": false, "beta-2.1": false, beta: false, "beta-2-lite": false });
  });

  it("refuses bad uploads with 400 (413 for bytes) in the documented error shape, charging nothing", async () => {
    const { accountId, key } = await newFundedKey(5n);
    const before = await available(accountId);
    const good = pngBlob(await solidPng(32, 32, [100, 100, 100]));
    const base: Array<[string, string | Blob, string?]> = [["model", "alpha-2.5-flare"], ["prompt", "x"]];
    const cases: Array<[string, Array<[string, string | Blob, string?]>, number, string]> = [
      ["a text file as the image", [...base, ["image", new Blob(["not an image at all"], { type: "image/png" }), "fake.png"]], 400, "invalid_field"],
      ["a GIF", [...base, ["image", new Blob([new Uint8Array(await sharp({ create: { width: 8, height: 8, channels: 3, background: "red" } }).gif().toBuffer())], { type: "image/gif" })]], 400, "invalid_field"],
      ["an image over 4096 px on a side", [...base, ["image", pngBlob(await solidPng(4097, 8, [0, 0, 0]))]], 400, "invalid_field"],
      ["no image", base, 400, "missing_field"],
      ["the image as text", [...base, ["image", "https://example.com/cat.png"]], 400, "invalid_field"],
      ["more images than the edge takes", [...base, ...Array.from({ length: MAX_IMAGES + 1 }, (): [string, Blob] => ["image[]", good])], 400, "invalid_field"],
      ["a file over the byte bound", [...base, ["image", new Blob([new Uint8Array(MAX_FILE_BYTES + 1)], { type: "image/png" })]], 413, "body_too_large"],
      ["a mask of another size", [...base, ["image", good], ["mask", pngBlob(await leftHalfMask(16, 16))]], 400, "invalid_field"],
      ["a mask without transparency", [...base, ["image", good], ["mask", pngBlob(await solidPng(32, 32, [0, 0, 0]))]], 400, "invalid_field"],
      ["an unknown file field", [...base, ["image", good], ["photo", good]], 400, "unknown_field"],
      ["an unknown text field", [...base, ["image", good], ["style", "vivid"]], 400, "unknown_field"],
      ["a field sent twice", [...base, ["image", good], ["prompt", "y"]], 400, "invalid_field"],
      ["n that is not a number", [...base, ["image", good], ["n", "two"]], 400, "invalid_field"],
      ["an unknown model", [["model", "gamma"], ["prompt", "x"], ["image", good]], 400, "unknown_model"],
    ];
    for (const [label, parts, status, code] of cases) {
      const response = await postForm(key, parts);
      const body = await json(response);
      expect([label, response.status, body.error?.code, body.error?.type]).toEqual([label, status, code, "gateway_error"]);
      expect(body.error.message).toMatch(/\(request id: req_[A-Za-z0-9_-]{22}\)$/);
    }
    expect(await available(accountId)).toBe(before);
  });

  it("refuses an edit without a key (401) and one over the balance (403), charging nothing", async () => {
    const image = pngBlob(await solidPng(16, 16, [1, 1, 1]));
    const keyless = await fetch(`${stack.edgeUrl}/v1/images/edits`, { method: "POST", body: (() => { const form = new FormData(); form.append("image", image, "a.png"); return form; })() });
    expect(keyless.status).toBe(401);
    const { accountId, key } = await newFundedKey(0n);
    const poor = await postForm(key, [["model", "alpha-2.5-flare"], ["prompt", "x"], ["image", image]]);
    expect(poor.status).toBe(403);
    expect((await json(poor)).error.code).toBe("insufficient_user_quota");
    expect(await available(accountId)).toBe(0n);
  });
});
