import type { Route, SimRequest, SimulatorCore } from "../server.ts";
import { malformedReply } from "../server.ts";
import { parsePixelSize, sizeForAspect } from "../png.ts";
import { asRecord, count, inputCount, noteInputs } from "./common.ts";
import { PolledJobs, type PolledJob } from "./polled.ts";

// Replicate predictions: POST {base}/models/<owner>/<name>/predictions (or {base}/predictions
// with a version) with {input: {prompt, aspect_ratio, num_outputs, ...}}. With "Prefer: wait"
// the answer is held until the prediction ends or the wait runs out (60 s by default), then
// it is the prediction object: finished with output URLs, or still "starting"/"processing",
// to be polled at urls.get (GET {base}/predictions/<id>). Flagged content ends "failed".

const DEFAULT_WAIT_SECONDS = 60;

export function replicateRoutes(sim: SimulatorCore): Route[] {
  const jobs = new PolledJobs(sim);

  async function prediction(job: PolledJob, finished: boolean) {
    const base = {
      id: job.id,
      model: "sim/model",
      version: "sim",
      input: job.input,
      logs: "",
      created_at: new Date(job.readyAt - job.effective.delayMs).toISOString(),
      urls: { get: `${sim.origin}/v1/predictions/${job.id}`, cancel: `${sim.origin}/v1/predictions/${job.id}/cancel` },
    };
    if (!finished) return { ...base, status: job.polls === 0 ? "starting" : "processing", output: null, error: null };
    switch (job.effective.mode) {
      case "refuse":
        return { ...base, status: "failed", output: null, error: "The input or output was flagged as sensitive. Please try again with different inputs. (E005)" };
      case "fail":
        return { ...base, status: "failed", output: null, error: "Prediction failed: CUDA error: an illegal memory access was encountered" };
      default:
        return { ...base, status: "succeeded", output: await jobs.results(job), error: null, completed_at: new Date().toISOString() };
    }
  }

  async function submit(req: SimRequest) {
    const body = asRecord(req.body);
    const input = asRecord(body.input);
    noteInputs(sim, inputCount(input, ["image", ...Array.from({ length: 8 }, (_, index) => `input_image${index === 0 ? "" : `_${index + 1}`}`)]), input.mask);
    const prompt = String(input.prompt ?? "");
    const effective = sim.effective(prompt);
    if (effective.mode === "hang") return { hang: true as const };
    if (effective.mode === "malformed") {
      await sim.wait(effective.delayMs, req);
      return malformedReply();
    }
    const asked = parsePixelSize(input.size) ?? sizeForAspect(typeof input.aspect_ratio === "string" ? input.aspect_ratio : "1:1", "1K");
    const job = jobs.submit(prompt, effective, asked, count(input.num_outputs, 1, 4), input);
    const prefer = String(req.headers.prefer ?? "");
    const waitMatch = /^wait(?:=(\d+))?$/.exec(prefer.trim());
    if (waitMatch && effective.mode !== "slow-poll") {
      const waitMs = Number(waitMatch[1] ?? DEFAULT_WAIT_SECONDS) * 1000;
      await sim.wait(Math.min(effective.delayMs, waitMs), req);
      if (Date.now() >= job.readyAt) {
        job.polls = job.pollsNeeded + 1;
        return { status: 201, json: await prediction(job, true) };
      }
    }
    return { status: 201, json: await prediction(job, false) };
  }

  return [
    { name: "submit", method: "POST", pattern: /^\/v1\/models\/[\w.-]+\/[\w.-]+\/predictions$/, handle: submit },
    { name: "submit", method: "POST", pattern: /^\/v1\/predictions$/, handle: submit },
    {
      name: "poll",
      method: "GET",
      pattern: /^\/v1\/predictions\/([\w-]+)$/,
      async handle(_req, match) {
        const job = jobs.get(match[1]!);
        if (!job) return { status: 404, json: { detail: "Not found." } };
        return { status: 200, json: await prediction(job, jobs.poll(job)) };
      },
    },
  ];
}
