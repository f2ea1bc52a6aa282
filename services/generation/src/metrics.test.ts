import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { describe, expect, it } from "vitest";
import { GenerationMetrics, JOB_STEP_CHANNEL, type JobStep } from "./metrics.ts";
import { AnswerGate } from "./answer-gate.ts";

// In-process only: the step histogram and the diagnostics channel a sampler
// (bench/service-sampler.mjs) reads each finished step from, and the answer gate's gauges.
describe("GenerationMetrics.stepTook", () => {
  it("counts each finished step in the histogram and publishes its name on the job-step channel", async () => {
    const metrics = new GenerationMetrics();
    const published: unknown[] = [];
    const listener = (message: unknown) => published.push(message);
    subscribe(JOB_STEP_CHANNEL, listener);
    try {
      const steps: JobStep[] = ["slot_and_hold", "upstream", "store", "outcome", "outcome"];
      for (const step of steps) metrics.stepTook(step, performance.now() - 5);
      expect(published).toEqual(steps);
    } finally {
      unsubscribe(JOB_STEP_CHANNEL, listener);
    }
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^orvado_generation_job_step_seconds_count\{step="outcome"\} 2$/m);
    expect(text).toMatch(/^orvado_generation_job_step_seconds_count\{step="store"\} 1$/m);
  });
});

describe("GenerationMetrics.watchAnswers", () => {
  it("reads the answer gate's gauges at scrape time", async () => {
    const gate = new AnswerGate({ answers: 1, bytes: 1024 * 1024 });
    const metrics = new GenerationMetrics();
    metrics.watchAnswers(() => ({ waiting: gate.waiting, ...gate.held }));
    const holder = gate.pass();
    await holder.admit(40_000);
    const waiting = gate.pass().admit(30_000);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^orvado_generation_answers_waiting 1$/m);
    expect(text).toMatch(/^orvado_generation_answers_admitted 1$/m);
    expect(text).toMatch(/^orvado_generation_answer_bytes_admitted 40000$/m);
    holder.release();
    await waiting;
    expect(await metrics.registry.metrics()).toMatch(/^orvado_generation_answers_waiting 0$/m);
  });
});
