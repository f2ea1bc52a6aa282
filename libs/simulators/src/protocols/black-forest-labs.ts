import type { Route, SimulatorCore } from "../server.ts";
import { malformedReply } from "../server.ts";
import { sizeForAspect } from "../png.ts";
import { asRecord, inputCount, noteInputs } from "./common.ts";
import { PolledJobs } from "./polled.ts";

// Black Forest Labs: POST {base}/<model> (for example /v1/flux-pro-1.1) with {prompt, width,
// height, aspect_ratio, ...} answers {id, polling_url}; GET polling_url answers
// {status: "Pending" | "Ready" | "Error" | "Request Moderated", result: {sample}}; the
// client then downloads result.sample. Moderation shows up while polling, as upstream.

export function blackForestLabsRoutes(sim: SimulatorCore): Route[] {
  const jobs = new PolledJobs(sim);
  return [
    {
      name: "poll",
      method: "GET",
      pattern: /^\/v1\/get_result$/,
      async handle(req) {
        const job = jobs.get(req.url.searchParams.get("id") ?? "");
        if (!job) return { status: 404, json: { detail: "Task not found" } };
        if (!jobs.poll(job)) return { status: 200, json: { id: job.id, status: "Pending", result: null, progress: null } };
        switch (job.effective.mode) {
          case "refuse":
            return { status: 200, json: { id: job.id, status: "Request Moderated", result: null, details: { "Moderation Reasons": ["Derivative Works Filter"] } } };
          case "fail":
            return { status: 200, json: { id: job.id, status: "Error", result: null, details: { error: "generation failed on the worker" } } };
          case "malformed":
            return malformedReply();
          default: {
            const [sample] = await jobs.results(job);
            const now = Date.now() / 1000;
            return { status: 200, json: { id: job.id, status: "Ready", result: { sample, seed: 1234, start_time: now - 1, end_time: now, duration: 1 } } };
          }
        }
      },
    },
    {
      name: "submit",
      method: "POST",
      pattern: /^\/v1\/([\w.-]+)$/,
      async handle(req) {
        const body = asRecord(req.body);
        noteInputs(sim, inputCount(body, ["input_image", ...Array.from({ length: 9 }, (_, index) => `input_image_${index + 2}`)]), body.mask);
        const prompt = String(body.prompt ?? "");
        const effective = sim.effective(prompt);
        if (effective.mode === "hang") return { hang: true };
        const asked =
          typeof body.width === "number" && typeof body.height === "number"
            ? { width: body.width, height: body.height }
            : sizeForAspect(typeof body.aspect_ratio === "string" ? body.aspect_ratio : "1:1", "1K");
        const job = jobs.submit(prompt, effective, asked, 1, body);
        return {
          status: 200,
          json: { id: job.id, polling_url: `${sim.origin}/v1/get_result?id=${job.id}`, cost: 4, input_mp: 0, output_mp: (asked.width * asked.height) / 1e6 },
        };
      },
    },
  ];
}
