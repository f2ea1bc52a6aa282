import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import sharp from "sharp";
import { startSimulator, type Simulator } from "../index.ts";

// The AUTOMATIC1111 simulator on its own, over raw HTTP on 127.0.0.1, as A1111's API
// answers (the adapter is tested against it in services/generation).

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
const json = async (response: Response | Promise<Response>): Promise<any> => (await response).json();
const AUTH = { authorization: `Basic ${Buffer.from("artist:brush").toString("base64")}` };
const post = (url: string, body: unknown, headers: Record<string, string> = AUTH) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
const size = async (base64: string) => {
  const meta = await sharp(Buffer.from(base64, "base64")).metadata();
  return [meta.format, meta.width, meta.height];
};
const solid = async () => (await sharp({ create: { width: 32, height: 32, channels: 3, background: "#808080" } }).png().toBuffer()).toString("base64");

/** Waits until a job holds the queue (/progress names it): a request merely received may not yet. */
const untilRunning = async () => {
  for (;;) {
    const progress = await json(fetch(`${sim.baseUrl}/sdapi/v1/progress?skip_current_image=true`, { headers: AUTH }));
    if (progress.state.job_count > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator("automatic1111", { behaviour: { apiKey: "artist:brush" } });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

describe("the AUTOMATIC1111 simulator", () => {
  it("answers txt2img with base64 PNGs of the asked size, a grid first for a batch, and info as JSON text", async () => {
    const body = await json(post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "a fox", width: 640, height: 384, batch_size: 2, seed: 7 }));
    expect(body.images).toHaveLength(3);
    for (const image of body.images) expect(await size(image)).toEqual(["png", 640, 384]);
    const info = JSON.parse(body.info);
    expect(info).toMatchObject({ index_of_first_image: 1, all_seeds: [7, 8], width: 640, height: 384 });
    expect(body.parameters).toMatchObject({ prompt: "a fox", batch_size: 2 });
    expect(sim.received("txt2img")[0]!.body).toMatchObject({ prompt: "a fox" });
  });

  it("takes basic auth (--api-auth user:password) and refuses another", async () => {
    const wrong = { authorization: `Basic ${Buffer.from("artist:nope").toString("base64")}` };
    expect((await post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "x" }, wrong)).status).toBe(401);
  });

  it("reports a running job's rising progress and a preview, and idles at 0 with job_count 0", async () => {
    const idle = await json(fetch(`${sim.baseUrl}/sdapi/v1/progress`, { headers: AUTH }));
    expect(idle).toMatchObject({ progress: 0, current_image: null, state: { job_count: 0 } });
    const job = post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "slow [sim:delay=600]", steps: 6, width: 256, height: 256 });
    const seen: number[] = [];
    let preview: string | null = null;
    for (let poll = 0; poll < 100 && seen.at(-1) !== 1; poll += 1) {
      const progress = await json(fetch(`${sim.baseUrl}/sdapi/v1/progress?skip_current_image=false`, { headers: AUTH }));
      if (progress.state.job_count > 0) seen.push(progress.progress);
      preview ??= progress.current_image;
      if (progress.state.job_count === 0 && seen.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    expect((await job).status).toBe(200);
    expect(seen.length).toBeGreaterThan(2);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect(seen.at(-1)!).toBeGreaterThan(seen[0]!);
    expect(await size(preview!)).toEqual(["png", 64, 64]);
  });

  it("ends the running job at /interrupt, answering the images of the rounds begun", async () => {
    const job = post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "long [sim:delay=60000]", n_iter: 3, batch_size: 1, width: 128, height: 128 });
    await untilRunning();
    expect((await post(`${sim.baseUrl}/sdapi/v1/interrupt`, {})).status).toBe(200);
    const body = await json(job);
    expect(body.images).toHaveLength(1);
    expect(sim.count("interrupt")).toBe(1);
  });

  it("runs one job at a time: a second waits for the first", async () => {
    const first = post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "first [sim:delay=300]", width: 64, height: 64 });
    await untilRunning();
    const second = post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "second", width: 64, height: 64 });
    const order: string[] = [];
    await Promise.all([first.then(() => order.push("first")), second.then(() => order.push("second"))]);
    expect(order).toEqual(["first", "second"]);
  });

  it("answers img2img from init_images and a mask, recording what it received", async () => {
    const image = await solid();
    const body = await json(post(`${sim.baseUrl}/sdapi/v1/img2img`, { prompt: "paint", init_images: [image], mask: image, width: 96, height: 64, denoising_strength: 0.75 }));
    expect(await size(body.images[0])).toEqual(["png", 96, 64]);
    expect(body.parameters).toMatchObject({ init_images: null, mask: null });
    expect(sim.stats.lastInputs).toEqual({ images: 1, mask: true });
    expect(sim.received("img2img")[0]!.body).toMatchObject({ init_images: [image], mask: image });
  });

  it("answers bad input and injected failures in A1111's shapes", async () => {
    const missing = await post(`${sim.baseUrl}/sdapi/v1/img2img`, { prompt: "x" });
    expect([missing.status, await missing.json()]).toEqual([404, { error: "HTTPException", detail: "Init image not found", body: "", errors: "404: Init image not found" }]);
    const garbage = await json(post(`${sim.baseUrl}/sdapi/v1/img2img`, { prompt: "x", init_images: ["bm90IGFuIGltYWdl"] }));
    expect(garbage.detail).toBe("Invalid encoded image");
    expect(await json(post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "x", sampler_name: "Nope" }))).toMatchObject({ detail: "Sampler not found" });
    const typed = await post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "x", width: "wide" });
    expect([typed.status, (await json(typed)).detail[0].loc]).toEqual([422, ["body", "width"]]);
    const failed = await post(`${sim.baseUrl}/sdapi/v1/txt2img`, { prompt: "x [sim:fail]" });
    expect([failed.status, (await json(failed)).errors]).toEqual([500, "CUDA out of memory. Tried to allocate 2.00 GiB"]);
  });
});
