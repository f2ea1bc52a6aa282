import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { parsePromptDirectives, startSimulator, type Simulator } from "./index.ts";

// The simulators on their own, over raw HTTP, as each real API answers
// (the AI SDK adapters are tested against them in services/generation).

const png = async (base64OrBytes: string | Buffer) => {
  const bytes = typeof base64OrBytes === "string" ? Buffer.from(base64OrBytes, "base64") : base64OrBytes;
  const meta = await sharp(bytes).metadata();
  return [meta.format, meta.width, meta.height];
};
// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = async (response: Response | Promise<Response>): Promise<any> => (await response).json();
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

describe("prompt directives", () => {
  it("parses modes, delays and delivery sizes, ignoring malformed ones", () => {
    expect(parsePromptDirectives("a cat [sim:refuse]")).toEqual({ mode: "refuse" });
    expect(parsePromptDirectives("[sim:delay=250] [sim:slow-poll] [sim:size=800x600]")).toEqual({ mode: "slow-poll", delayMs: 250, size: { width: 800, height: 600 } });
    expect(parsePromptDirectives("[sim:delay=abc] [sim:explode]")).toEqual({});
  });
});

describe("the OpenAI simulator", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator("openai", { behaviour: { apiKey: "sk-1" } });
  });
  afterAll(() => sim.close());

  it("answers b64_json PNGs at the requested size, counting requests and keeping the last body", async () => {
    const response = await post(`${sim.baseUrl}/images/generations`, { model: "gpt-image-1", prompt: "x", n: 2, size: "1536x1024" }, { authorization: "Bearer sk-1" });
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body.data).toHaveLength(2);
    expect(await png(body.data[0].b64_json)).toEqual(["png", 1536, 1024]);
    expect(sim.count("generate")).toBe(1);
    expect(sim.stats.lastBody).toMatchObject({ model: "gpt-image-1", n: 2 });
  });

  it("refuses a wrong key with 401", async () => {
    expect((await post(`${sim.baseUrl}/images/generations`, { prompt: "x" }, { authorization: "Bearer nope" })).status).toBe(401);
  });

  it("follows the programmed behaviour, and prompt directives over it", async () => {
    sim.behave({ mode: "fail", failStatus: 503 });
    expect((await post(`${sim.baseUrl}/images/generations`, { prompt: "x" }, { authorization: "Bearer sk-1" })).status).toBe(503);
    const refused = await post(`${sim.baseUrl}/images/generations`, { prompt: "x [sim:refuse]" }, { authorization: "Bearer sk-1" });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error.code).toBe("moderation_blocked");
    sim.behave({ mode: "ok", outputSize: { width: 320, height: 200 } });
    const body = await await json(post(`${sim.baseUrl}/images/generations`, { prompt: "x", size: "1024x1024" }, { authorization: "Bearer sk-1" }));
    expect(await png(body.data[0].b64_json)).toEqual(["png", 320, 200]);
  });

  it("counts the calls open at once, until each is answered or its client leaves", async () => {
    sim.reset();
    const auth = { authorization: "Bearer sk-1" };
    const slow = [1, 2, 3].map(() => post(`${sim.baseUrl}/images/generations`, { prompt: "x [sim:delay=300]" }, auth));
    const leaving = new AbortController();
    const hung = fetch(`${sim.baseUrl}/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify({ prompt: "[sim:hang]" }),
      signal: leaving.signal,
    }).catch(() => "left");
    while (sim.inFlight < 4) await new Promise((resolve) => setTimeout(resolve, 10));
    await Promise.all(slow);
    leaving.abort();
    await hung;
    while (sim.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sim.stats.peakInFlight).toBe(4);
    await post(`${sim.baseUrl}/images/generations`, { prompt: "x" }, auth);
    expect(sim.stats.peakInFlight).toBe(4);
    sim.reset();
    expect(sim.stats.peakInFlight).toBe(0);
  });

  it("hangs until the client gives up, and close() ends hung connections", async () => {
    sim.reset();
    const aborted = await fetch(`${sim.baseUrl}/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-1" },
      body: JSON.stringify({ prompt: "[sim:hang]" }),
      signal: AbortSignal.timeout(200),
    }).then(() => "answered", (error: Error) => error.name);
    expect(aborted).toBe("TimeoutError");
    const other = await startSimulator("openai");
    const pending = post(`${other.baseUrl}/images/generations`, { prompt: "[sim:hang]" }).then(() => "answered", () => "closed");
    await new Promise((resolve) => setTimeout(resolve, 50));
    await other.close();
    expect(await pending).toBe("closed");
  });
});

describe("the Google simulator", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator("google");
  });
  afterAll(() => sim.close());

  it("answers Gemini generateContent with inline image data at the aspect ratio and image size asked", async () => {
    const body = await json(
      post(`${sim.baseUrl}/models/gemini-2.5-flash-image:generateContent`, {
        contents: [{ role: "user", parts: [{ text: "a fox" }] }],
        generationConfig: { responseModalities: ["IMAGE"], imageConfig: { aspectRatio: "16:9", imageSize: "2K" } },
      }),
    );
    const part = body.candidates[0].content.parts[0];
    expect(part.inlineData.mimeType).toBe("image/png");
    const [, width, height] = await png(part.inlineData.data);
    expect((width as number) / (height as number)).toBeCloseTo(16 / 9, 1);
  });
});

describe("the Black Forest Labs simulator", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator("black-forest-labs", { behaviour: { pollsBeforeReady: 2 } });
  });
  afterAll(() => sim.close());

  it("takes a submission, answers Pending while polled, then Ready with a URL to download", async () => {
    const submitted = await await json(post(`${sim.baseUrl}/flux-pro-1.1`, { prompt: "x", width: 1024, height: 768 }));
    expect(submitted.polling_url).toContain("/v1/get_result?id=");
    const states: string[] = [];
    let result: { status: string; result: { sample: string } | null } | undefined;
    for (let i = 0; i < 5; i += 1) {
      result = await await json(fetch(submitted.polling_url));
      states.push(result!.status);
      if (result!.status === "Ready") break;
    }
    expect(states).toEqual(["Pending", "Pending", "Ready"]);
    const image = Buffer.from(await (await fetch(result!.result!.sample)).arrayBuffer());
    expect(await png(image)).toEqual(["png", 1024, 768]);
    expect(sim.count("download")).toBe(1);
  });
});

describe("the Replicate simulator", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator("replicate");
  });
  afterAll(() => sim.close());

  it("answers a finished prediction under Prefer: wait", async () => {
    const response = await post(`${sim.baseUrl}/models/black-forest-labs/flux-schnell/predictions`, { input: { prompt: "x", aspect_ratio: "1:1" } }, { prefer: "wait" });
    expect(response.status).toBe(201);
    const prediction = await json(response);
    expect(prediction.status).toBe("succeeded");
    expect(prediction.output[0]).toContain("/files/");
  });

  it("answers a running prediction to poll without Prefer: wait, ending failed with E005 when refusing", async () => {
    // Without "Prefer: wait" the prediction comes back at once, still starting.
    const started = await await json(post(`${sim.baseUrl}/predictions`, { version: "abc", input: { prompt: "x [sim:refuse]" } }));
    expect(started.status).toBe("starting");
    let prediction = started;
    for (let i = 0; i < 5 && !["succeeded", "failed"].includes(prediction.status); i += 1) prediction = await await json(fetch(started.urls.get));
    expect(prediction.status).toBe("failed");
    expect(prediction.error).toContain("E005");
  });
});

describe("the other simulators", () => {
  it("ByteDance, fal and OpenAI-compatible answer in their own shapes", async () => {
    const bytedance = await startSimulator("bytedance");
    const fal = await startSimulator("fal");
    const compatible = await startSimulator("openai-compatible", { answerWithUrls: true });
    try {
      const seedream = await await json(post(`${bytedance.baseUrl}/images/generations`, { model: "seedream", prompt: "x", size: "2048x2048", response_format: "b64_json" }));
      expect(await png(seedream.data[0].b64_json)).toEqual(["png", 2048, 2048]);
      const refusal = await await json(post(`${bytedance.baseUrl}/images/generations`, { prompt: "[sim:refuse]" }));
      expect(refusal.error.code).toBe("OutputImageSensitiveContentDetected");
      const flux = await await json(post(`${fal.baseUrl}/fal-ai/flux/dev`, { prompt: "x", image_size: { width: 512, height: 256 }, num_images: 1 }));
      expect(flux.images[0]).toMatchObject({ width: 512, height: 256, content_type: "image/png" });
      const violation = await post(`${fal.baseUrl}/fal-ai/flux/dev`, { prompt: "[sim:refuse]" });
      expect(violation.status).toBe(422);
      const urls = await await json(post(`${compatible.baseUrl}/images/generations`, { prompt: "x", size: "256x256" }));
      expect(await png(Buffer.from(await (await fetch(urls.data[0].url)).arrayBuffer()))).toEqual(["png", 256, 256]);
      const malformed = await post(`${compatible.baseUrl}/images/generations`, { prompt: "[sim:malformed]" });
      await expect(malformed.json()).rejects.toThrow();
    } finally {
      await Promise.all([bytedance.close(), fal.close(), compatible.close()]);
    }
  });
});

describe("the serve CLI", () => {
  it("runs one simulator as its own process and prints its address", async () => {
    const script = fileURLToPath(new URL("./serve.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script, "fal", "--port", "0", "--latency-ms", "5"], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString()));
        child.once("exit", (code) => reject(new Error(`serve exited with ${code}`)));
      });
      const { baseUrl } = JSON.parse(line);
      const answer = await await json(post(`${baseUrl}/fal-ai/flux/dev`, { prompt: "x", image_size: "square_hd" }));
      expect(answer.images).toHaveLength(1);
    } finally {
      child.kill("SIGTERM");
    }
  });
});
