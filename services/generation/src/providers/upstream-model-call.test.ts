import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { parseCatalog } from "../catalog.ts";
import { generateOnChannel, imageMediaType } from "./upstream.ts";

// What the gateway does itself since it calls the provider package's image model
// directly instead of the AI SDK's generateImage (upstream.ts imagesFrom), over real
// HTTP (node:http) against a local server speaking OpenAI's images API.

let server: Server;
let baseUrl: string;
let answer: unknown;
const received: { contentType: string; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ contentType: req.headers["content-type"] ?? "", body: Buffer.concat(chunks).toString("latin1") });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const channel = () =>
  parseCatalog({
    models: [{ id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "c", provider: "openai-compatible", upstreamModel: "m", baseUrl, apiKeyEnv: "K", capacity: 1 }] }],
  }).get("beta")!.channels[0]!;
const settings = { jobTimeoutMs: 60_000, allowPrivateUpstreams: false, maxUpstreamBytes: 50 * 1024 * 1024 };
const png = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: { r: 9, g: 99, b: 199 } } }).png().toBuffer();

describe("the image model called directly", () => {
  it("fails a call whose answer holds no image, naming it as generateImage did", async () => {
    answer = { data: [] };
    const outcome = await generateOnChannel(channel(), "k", { prompt: "x", width: 64, height: 64, n: 1, quality: undefined }, AbortSignal.timeout(10_000), settings);
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
    expect(outcome.ok ? "" : outcome.detail).toMatch(/NoImageGeneratedError/);
  });

  it("decodes base64 images to the delivered bytes", async () => {
    const image = await png(64, 64);
    answer = { data: [{ b64_json: image.toString("base64") }, { b64_json: image.toString("base64url") }] };
    const outcome = await generateOnChannel(channel(), "k", { prompt: "x", width: 64, height: 64, n: 2, quality: undefined }, AbortSignal.timeout(10_000), settings);
    if (!outcome.ok) throw new Error(outcome.detail);
    expect(outcome.images.map((bytes) => Buffer.compare(bytes, image))).toEqual([0, 0]);
  });

  it("sends an edit's input images with their media type", async () => {
    answer = { data: [{ b64_json: (await png(64, 64)).toString("base64") }] };
    const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 1, g: 2, b: 3 } } }).jpeg().toBuffer();
    received.length = 0;
    const outcome = await generateOnChannel(channel(), "k", { prompt: "x", width: 64, height: 64, n: 1, quality: undefined, edit: { images: [jpeg, await png(64, 64)] } }, AbortSignal.timeout(10_000), settings);
    expect(outcome.ok).toBe(true);
    expect(received[0]!.contentType).toMatch(/^multipart\/form-data/);
    const partTypes = [...received[0]!.body.matchAll(/content-type: (image\/[a-z]+)/gi)].map((match) => match[1]);
    expect(partTypes).toEqual(["image/jpeg", "image/png"]);
  });
});

describe("imageMediaType", () => {
  it("tells PNG, JPEG and WebP apart, and says PNG for anything else", async () => {
    const base = sharp({ create: { width: 8, height: 8, channels: 3, background: "#123456" } });
    expect(imageMediaType(await base.clone().png().toBuffer())).toBe("image/png");
    expect(imageMediaType(await base.clone().jpeg().toBuffer())).toBe("image/jpeg");
    expect(imageMediaType(await base.clone().webp().toBuffer())).toBe("image/webp");
    expect(imageMediaType(new Uint8Array([1, 2, 3]))).toBe("image/png");
  });
});
