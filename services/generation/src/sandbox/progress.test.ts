import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { UpstreamProgress } from "../providers/types.ts";
import { generateWithSandbox, type SandboxRequest } from "./provider.ts";
import { renderSandboxPng } from "./render.ts";
import { SANDBOX_PROGRESS_STEPS } from "./progress.ts";

// The sandbox's progress and partial images (docs/api.md#streaming), in process: what it
// reports while it "works", so streams and the lookup can be tried without an upstream.

function followed(prompt: string, overrides: Partial<SandboxRequest> = {}) {
  const reports: UpstreamProgress[] = [];
  const request: SandboxRequest = { prompt, width: 320, height: 200, n: 1, signal: new AbortController().signal, onProgress: (report) => reports.push(report), ...overrides };
  return { request, reports };
}

describe("the sandbox's progress", () => {
  it("reports its delay in rising fractions up to 1, with partial_images previews of its final image spread over it", async () => {
    const { request, reports } = followed("[sandbox:delay=200] a kite", { partialImages: 3 });
    const outcome = await generateWithSandbox(request);
    expect(outcome.ok && outcome.images[0]).toEqual(await renderSandboxPng("[sandbox:delay=200] a kite", 320, 200));
    expect(reports.map((report) => report.fraction)).toEqual(Array.from({ length: SANDBOX_PROGRESS_STEPS }, (_, step) => (step + 1) / SANDBOX_PROGRESS_STEPS));
    const withPreview = reports.flatMap((report, step) => (report.preview ? [step] : []));
    expect(withPreview).toHaveLength(3);
    // Spread over the work, not bunched at its start or end.
    expect(withPreview[0]).toBeGreaterThan(0);
    expect(withPreview.at(-1)).toBeLessThan(SANDBOX_PROGRESS_STEPS - 1);
    const previews = await Promise.all(reports.flatMap((report) => (report.preview ? [sharp(Buffer.from(report.preview.bytes)).metadata()] : [])));
    for (const preview of previews) expect([preview.format, preview.width, preview.height]).toEqual(["png", 256, 160]);
  });

  it("sends previews also without a delay, and none when the prompt will fail or refuse", async () => {
    const quick = followed("a quick one", { partialImages: 2 });
    await generateWithSandbox(quick.request);
    expect(quick.reports.filter((report) => report.preview)).toHaveLength(2);
    for (const prompt of ["[sandbox:fail] no", "[sandbox:refuse] no"]) {
      const doomed = followed(`[sandbox:delay=50] ${prompt}`, { partialImages: 2 });
      expect((await generateWithSandbox(doomed.request)).ok).toBe(false);
      expect(doomed.reports.some((report) => report.preview)).toBe(false);
    }
  });

  it("reports nothing for a job with neither a delay nor previews", async () => {
    const { request, reports } = followed("instant");
    expect((await generateWithSandbox(request)).ok).toBe(true);
    expect(reports).toEqual([]);
  });

  it("stops at an abort between steps, rejecting with the signal's reason", async () => {
    const controller = new AbortController();
    const { request, reports } = followed("[sandbox:delay=60000] long", { signal: controller.signal });
    const running = generateWithSandbox(request);
    setTimeout(() => controller.abort(new Error("the job's time limit")), 50);
    await expect(running).rejects.toThrow("the job's time limit");
    expect(reports).toEqual([]);
  });
});
