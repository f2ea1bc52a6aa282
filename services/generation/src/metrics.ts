import { channel } from "node:diagnostics_channel";
import { Counter, Gauge, Histogram, Registry } from "prom-client";

// Generation's Prometheus metrics, per model and channel. The registry is this
// service's own, not prom-client's global one: the stack runs every service in
// one process, and the edge serves this text next to its own (GetMetrics RPC).

export type JobOutcome = "succeeded" | "failed" | "refused" | "timeout" | "no_capacity";

/** What a webhook delivery attempt led to: delivered (2xx), another attempt scheduled, or the last one failed. */
export type WebhookAttemptResult = "delivered" | "retrying" | "failed";

/**
 * The steps of a job on its answer's path (docs/architecture.md#one-request-step-by-step):
 * the channel slot with the billing hold, the upstream call (failovers included), storing
 * the images, and recording the outcome (success or failure).
 */
export type JobStep = "slot_and_hold" | "upstream" | "store" | "outcome";

/**
 * Each finished step's name, for a sampler in the process (bench/service-sampler.mjs
 * counts them to see where jobs wait in a burst). With no subscriber nothing is published.
 */
export const JOB_STEP_CHANNEL = "orvado:generation:job-step";
const jobSteps = channel(JOB_STEP_CHANNEL);

export interface CapacityReading {
  model: string;
  channel: string;
  inUse: number;
  limit: number;
}

export interface AnswerGateReading {
  waiting: number;
  answers: number;
  bytes: number;
}

/** A refusal for capacity has no channel; it is counted under this one. */
export const NO_CHANNEL = "none";

export class GenerationMetrics {
  readonly registry = new Registry();
  #capacity: () => Iterable<CapacityReading> = () => [];
  #answers: () => AnswerGateReading = () => ({ waiting: 0, answers: 0, bytes: 0 });

  readonly #requests = new Counter({
    name: "orvado_generation_requests_total",
    help: "Image jobs asked of a model, by the channel they ran on (none: refused for capacity)",
    labelNames: ["model", "channel"] as const,
    registers: [this.registry],
  });

  readonly #outcomes = new Counter({
    name: "orvado_generation_outcomes_total",
    help: "How image jobs ended: succeeded, failed, refused (by the model), timeout or no_capacity",
    labelNames: ["model", "channel", "outcome"] as const,
    registers: [this.registry],
  });

  readonly #duration = new Histogram({
    name: "orvado_generation_job_duration_seconds",
    help: "Time from a job's start on its channel to its end",
    labelNames: ["model", "channel", "outcome"] as const,
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600],
    registers: [this.registry],
  });

  readonly #inFlight = new Gauge({
    name: "orvado_generation_jobs_in_flight",
    help: "Jobs running now",
    labelNames: ["model", "channel"] as const,
    registers: [this.registry],
  });

  readonly #steps = new Histogram({
    name: "orvado_generation_job_step_seconds",
    help: "Time each step of a job took on its answer's path: slot_and_hold, upstream, store, outcome",
    labelNames: ["step"] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });

  constructor() {
    for (const [name, help, pick] of [
      ["orvado_generation_answers_waiting", "Upstream answers arrived and not yet read, waiting for room in the answer gate (answer-gate.ts)", (reading: AnswerGateReading) => reading.waiting],
      ["orvado_generation_answers_admitted", "Jobs whose upstream answers are being read, decoded and stored now", (reading: AnswerGateReading) => reading.answers],
      ["orvado_generation_answer_bytes_admitted", "Bytes of those answers", (reading: AnswerGateReading) => reading.bytes],
    ] as const) {
      this.#gaugeReadAtScrape(name, help, [], (gauge) => gauge.set(pick(this.#answers())));
    }
    for (const [name, help, pick] of [
      ["orvado_generation_capacity_used", "Capacity slots this process holds (an upstream channel's capacity is shared by every replica)", (reading: CapacityReading) => reading.inUse],
      ["orvado_generation_capacity_limit", "Capacity slots configured for the channel", (reading: CapacityReading) => reading.limit],
    ] as const) {
      this.#gaugeReadAtScrape(name, help, ["model", "channel"], (gauge) => {
        gauge.reset();
        for (const reading of this.#capacity()) gauge.set({ model: reading.model, channel: reading.channel }, pick(reading));
      });
    }
  }

  /** A gauge filled at scrape time, so it can never drift from the state it mirrors. */
  #gaugeReadAtScrape(name: string, help: string, labelNames: string[], fill: (gauge: Gauge) => void): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        fill(this);
      },
    });
  }

  /** Where the answer gate's gauges read from (the job runner's AnswerGate). */
  watchAnswers(source: () => AnswerGateReading): void {
    this.#answers = source;
  }

  /** Where the capacity gauges read from (the job runner's slots). */
  watchCapacity(source: () => Iterable<CapacityReading>): void {
    this.#capacity = source;
  }

  /** Call when a job starts on a channel; call the returned function once with how it ended. */
  jobStarted(model: string, channel: string): (outcome: JobOutcome) => void {
    const labels = { model, channel };
    this.#requests.inc(labels);
    this.#inFlight.inc(labels);
    const started = performance.now();
    let ended = false;
    return (outcome) => {
      if (ended) return;
      ended = true;
      this.#inFlight.dec(labels);
      const withOutcome = { model, channel, outcome };
      this.#duration.observe(withOutcome, (performance.now() - started) / 1000);
      this.#outcomes.inc(withOutcome);
    };
  }

  /** A step that began at `startedAt` (performance.now()) has just ended. */
  stepTook(step: JobStep, startedAt: number): void {
    this.#steps.observe({ step }, (performance.now() - startedAt) / 1000);
    if (jobSteps.hasSubscribers) jobSteps.publish(step);
  }

  readonly #webhookAttempts = new Counter({
    name: "orvado_webhook_attempts_total",
    help: "Webhook delivery attempts: delivered (a 2xx answer), retrying (another attempt is scheduled), failed (the schedule's last)",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });

  webhookAttempt(result: WebhookAttemptResult): void {
    this.#webhookAttempts.inc({ result });
  }

  noCapacity(model: string): void {
    const labels = { model, channel: NO_CHANNEL };
    this.#requests.inc(labels);
    this.#outcomes.inc({ model, channel: NO_CHANNEL, outcome: "no_capacity" });
  }

  /** The Prometheus text exposition of this registry. */
  async exposition(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
