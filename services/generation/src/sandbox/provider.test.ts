import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { generateWithSandbox, type SandboxRequest } from "./provider.ts";
import { renderSandboxPng } from "./render.ts";

function request(prompt: string, overrides: Partial<SandboxRequest> = {}): SandboxRequest {
  return { prompt, width: 64, height: 64, n: 1, signal: new AbortController().signal, ...overrides };
}

describe("generateWithSandbox", () => {
  it("renders the prompt's own picture as the first image", async () => {
    const outcome = await generateWithSandbox(request("a teapot", { width: 96, height: 64 }));
    expect(outcome).toEqual({ ok: true, images: [await renderSandboxPng("a teapot", 96, 64)] });
  });

  it("returns n distinct PNGs of the requested size", async () => {
    const outcome = await generateWithSandbox(request("a teapot", { n: 3, width: 80, height: 48 }));
    if (!outcome.ok) throw new Error(`expected images, got ${outcome.message}`);
    expect(outcome.images).toHaveLength(3);
    for (const image of outcome.images) {
      const metadata = await sharp(image).metadata();
      expect([metadata.format, metadata.width, metadata.height]).toEqual(["png", 80, 48]);
    }
    const distinct = new Set(outcome.images.map((image) => image.toString("base64")));
    expect(distinct.size).toBe(3);
  });

  it("refuses on [sandbox:refuse]", async () => {
    expect(await generateWithSandbox(request("a cat [sandbox:refuse]"))).toEqual({
      ok: false,
      kind: "refused",
      message: "The sandbox model refused the prompt ([sandbox:refuse])",
    });
  });

  it("fails on [sandbox:fail]", async () => {
    expect(await generateWithSandbox(request("[Sandbox:Fail] a cat"))).toEqual({
      ok: false,
      kind: "failed",
      message: "The sandbox model failed the job ([sandbox:fail])",
    });
  });

  it("lets a refusal win over a failure", async () => {
    const outcome = await generateWithSandbox(request("[sandbox:fail] [sandbox:refuse]"));
    expect(outcome).toMatchObject({ ok: false, kind: "refused" });
  });

  it("waits for [sandbox:delay=<ms>] before answering", async () => {
    const started = performance.now();
    const outcome = await generateWithSandbox(request("a cat [sandbox:delay=200]"));
    // Only a lower bound: an upper bound would flake on a busy machine.
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect(outcome.ok).toBe(true);
  });

  it("applies the delay before a refusal", async () => {
    const started = performance.now();
    const outcome = await generateWithSandbox(request("[sandbox:delay=200][sandbox:refuse]"));
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect(outcome).toMatchObject({ ok: false, kind: "refused" });
  });

  it("rejects with the signal's reason when aborted during the delay", async () => {
    const controller = new AbortController();
    const job = generateWithSandbox(request("[sandbox:delay=600000]", { signal: controller.signal }));
    const reason = new Error("client went away");
    setTimeout(() => controller.abort(reason), 20);
    await expect(job).rejects.toBe(reason);
  });

  it("rejects with an AbortError when already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(generateWithSandbox(request("a cat", { signal: controller.signal }))).rejects.toMatchObject({
      name: "AbortError",
    });
  });

  it("refuses a bad size or count before waiting", async () => {
    await expect(generateWithSandbox(request("[sandbox:delay=600000]", { width: 5000 }))).rejects.toThrow(RangeError);
    await expect(generateWithSandbox(request("[sandbox:delay=600000]", { n: 0 }))).rejects.toThrow(RangeError);
  });
});
