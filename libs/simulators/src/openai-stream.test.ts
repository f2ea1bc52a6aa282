import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI, { APIError, toFile } from "openai";
import sharp from "sharp";
import { startSimulator, type Simulator } from "./index.ts";

// The OpenAI simulator's streamed images over real HTTP, read by OpenAI's own SDK (openai 7),
// which iterates the server-sent events of `stream: true`: if the SDK reads them, the shapes
// are OpenAI's (platform.openai.com/docs/api-reference/images-streaming).

let sim: Simulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSimulator("openai", { behaviour: { apiKey: "sk-1" } });
  client = new OpenAI({ apiKey: "sk-1", baseURL: sim.baseUrl, maxRetries: 0 });
});
afterAll(() => sim.close());

const formatOf = async (base64: string) => {
  const meta = await sharp(Buffer.from(base64, "base64")).metadata();
  return [meta.format, meta.width, meta.height];
};

describe("the OpenAI simulator, streaming (openai SDK over HTTP)", () => {
  it("streams partial_images partial_image events, then the completed image with usage", async () => {
    const stream = await client.images.generate({ model: "gpt-image-1", prompt: "a fox", size: "1536x1024", stream: true, partial_images: 2 });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events.map((event) => event.type)).toEqual(["image_generation.partial_image", "image_generation.partial_image", "image_generation.completed"]);
    const [first, second, completed] = events;
    expect(first).toMatchObject({ partial_image_index: 0, size: "1536x1024", output_format: "png", quality: "auto", background: "auto" });
    expect(second).toMatchObject({ partial_image_index: 1 });
    expect(typeof first!.created_at).toBe("number");
    // Partial images are smaller renders; the completed one is the size asked.
    expect((await formatOf(first!.b64_json))[0]).toBe("png");
    expect(await formatOf(completed!.b64_json)).toEqual(["png", 1536, 1024]);
    expect(completed!.type === "image_generation.completed" && completed!.usage).toMatchObject({ input_tokens: 10, input_tokens_details: { text_tokens: 10 } });
    expect(sim.stats.lastBody).toMatchObject({ stream: true, partial_images: 2 });
  });

  it("streams an edit (multipart) as image_edit events", async () => {
    const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: { r: 9, g: 9, b: 9 } } }).png().toBuffer();
    const stream = await client.images.edit({ model: "gpt-image-1", prompt: "bluer", image: await toFile(png, "in.png", { type: "image/png" }), stream: true, partial_images: 1 });
    const types = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toEqual(["image_edit.partial_image", "image_edit.completed"]);
    expect(sim.stats.lastBody).toMatchObject({ stream: true, partial_images: 1, images: 1 });
  });

  it("ends a stream with OpenAI's error event when the prompt asks for a mid-stream failure or refusal", async () => {
    for (const [directive, code] of [
      ["[sim:fail-mid-stream]", null],
      ["[sim:refuse-mid-stream]", "moderation_blocked"],
    ] as const) {
      const stream = await client.images.generate({ model: "gpt-image-1", prompt: `x ${directive}`, stream: true, partial_images: 2 });
      const types: string[] = [];
      const failure = await (async () => {
        for await (const event of stream) types.push(event.type);
      })().then(() => undefined, (error: unknown) => error);
      expect(types).toEqual(["image_generation.partial_image"]);
      expect(failure).toBeInstanceOf(APIError);
      expect((failure as APIError).code ?? null).toBe(code);
    }
  });

  it("refuses partial_images outside 0–3 with a 400", async () => {
    const refused = await client.images.generate({ model: "gpt-image-1", prompt: "x", stream: true, partial_images: 4 }).then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(400);
  });
});
