import { UpstreamFailure } from "../errors.ts";
import type { UpstreamProgress } from "../types.ts";
import type { ComfyApi, HistoryEntry, ImageRef } from "./api.ts";
import { nodeName } from "./graph.ts";
import type { ComfyMessage, EventHandlers, PreviewType } from "./socket.ts";
import type { ComfyGraph } from "./workflow.ts";

// Following one queued prompt to its images: by its websocket messages while the socket
// is open, by polling GET /history/<prompt_id> once it drops (or never opened), and by
// the history again when the socket said "done" without the output node's images.

export interface FollowOptions {
  api: ComfyApi;
  graph: ComfyGraph;
  output: string;
  pollIntervalMs: number;
  onProgress?: (progress: UpstreamProgress) => void;
}

export class PromptFollower {
  #promptIds = new Set<string>();
  #images: ImageRef[] | undefined;
  #settled = false;
  #lastFraction = 0;
  #resolve!: (how: "socket" | "poll") => void;
  #reject!: (error: unknown) => void;
  /** Settles when the socket says the job ended ("socket") or is gone ("poll"); rejects on a job error. */
  readonly ended: Promise<"socket" | "poll">;
  /** Whether the server has begun the job: only then is an interrupt ours to send. */
  started = false;

  constructor(private readonly options: FollowOptions) {
    this.ended = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.ended.catch(() => undefined);
  }

  /** Our prompt's id: the one we chose, and the one the server answered if it chose its own. */
  expect(promptId: string): void {
    this.#promptIds.add(promptId);
  }

  get handlers(): EventHandlers {
    return {
      message: (message) => this.#message(message),
      preview: (bytes, mediaType, promptId) => this.#preview(bytes, mediaType, promptId),
      closed: () => this.#settle("poll"),
      failed: (detail) => this.#fail(detail),
    };
  }

  /** The socket never opened: the job is followed by polling from the start. */
  pollFromStart(): void {
    this.started = true;
    this.#settle("poll");
  }

  /** The output node's images, once the job has ended. */
  async images(promptId: string, signal: AbortSignal): Promise<ImageRef[]> {
    const how = await this.ended;
    if (how === "socket" && this.#images?.length) return this.#images;
    return this.#poll(promptId, signal);
  }

  #message({ type, data }: ComfyMessage): void {
    const promptId = data.prompt_id;
    if (typeof promptId === "string" && !this.#promptIds.has(promptId)) return;
    if (typeof promptId !== "string" && type !== "executing") return;
    switch (type) {
      case "execution_start":
        this.started = true;
        return;
      case "progress":
        return this.#progress(data.value, data.max);
      case "executed":
        if (isNodeId(data.node) && String(data.node) === this.options.output) this.#images = imagesOf(data.output) ?? this.#images;
        return;
      case "executing":
        // Without a prompt id (servers before 2024) "executing" carries only the node.
        if (typeof data.node === "string") this.started = true;
        if (data.node === null && typeof promptId === "string") this.#settle("socket");
        return;
      case "execution_success":
        return this.#settle("socket");
      case "execution_error":
        return this.#fail(errorDetail(this.options.graph, data));
      case "execution_interrupted":
        return this.#fail(`ComfyUI interrupted the job at ${nodeName(this.options.graph, data.node_id, data.node_type)}`);
    }
  }

  #progress(value: unknown, max: unknown): void {
    if (typeof value !== "number" || typeof max !== "number" || max <= 0) return;
    // JSON's 1e999 is Infinity, and Infinity / Infinity NaN, which would stick as the fraction for good.
    const step = value / max;
    if (!Number.isFinite(step)) return;
    // A progress bar does not go back: a second sampler's steps count from zero again.
    const fraction = Math.min(1, Math.max(this.#lastFraction, step));
    if (fraction === this.#lastFraction && this.#lastFraction > 0) return;
    this.#lastFraction = fraction;
    this.started = true;
    this.options.onProgress?.({ fraction });
  }

  #preview(bytes: Uint8Array, mediaType: PreviewType, promptId: string | undefined): void {
    if (promptId !== undefined && !this.#promptIds.has(promptId)) return;
    this.options.onProgress?.({ preview: { bytes, mediaType } });
  }

  #settle(how: "socket" | "poll"): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(how);
  }

  #fail(detail: string): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(new UpstreamFailure(detail));
  }

  async #poll(promptId: string, signal: AbortSignal): Promise<ImageRef[]> {
    for (;;) {
      const entry = await this.options.api.history(promptId, signal);
      if (entry) return this.#fromHistory(entry);
      await sleep(this.options.pollIntervalMs, signal);
    }
  }

  #fromHistory(entry: HistoryEntry): ImageRef[] {
    const messages = entry.status?.messages ?? [];
    const error = messages.find(([type]) => type === "execution_error");
    if (error) throw new UpstreamFailure(errorDetail(this.options.graph, error[1]));
    const interrupted = messages.find(([type]) => type === "execution_interrupted");
    if (interrupted) throw new UpstreamFailure(`ComfyUI interrupted the job at ${nodeName(this.options.graph, interrupted[1].node_id, interrupted[1].node_type)}`);
    if (entry.status?.status_str === "error") throw new UpstreamFailure("ComfyUI ended the job with an error and no message");
    const images = imagesOf(entry.outputs?.[this.options.output]);
    if (!images?.length) throw new UpstreamFailure(`ComfyUI finished the job without images from ${nodeName(this.options.graph, this.options.output)}`);
    return images;
  }
}

/** A node id as servers send it: a string, or a number on old servers. */
const isNodeId = (node: unknown): node is string | number => typeof node === "string" || typeof node === "number";

/** "ComfyUI node 3 (KSampler): <exception message>", what the operator reads. */
function errorDetail(graph: ComfyGraph, data: Record<string, unknown>): string {
  const type = typeof data.exception_type === "string" && data.exception_type ? ` [${data.exception_type}]` : "";
  const message = typeof data.exception_message === "string" ? data.exception_message.trim() : "no message";
  return `ComfyUI ${nodeName(graph, data.node_id, data.node_type)}: ${message}${type}`.slice(0, 1000);
}

function imagesOf(output: unknown): ImageRef[] | undefined {
  const images = (output as { images?: unknown } | undefined)?.images;
  if (!Array.isArray(images)) return undefined;
  return images
    .filter((image): image is ImageRef => image !== null && typeof image === "object" && typeof (image as ImageRef).filename === "string")
    .map((image) => ({ filename: image.filename, subfolder: image.subfolder ?? "", type: image.type ?? "output" }))
    .filter(isJobOutput);
}

/** Output folders a job's images are saved to (SaveImage: output, PreviewImage: temp); input holds every job's uploads. */
const OUTPUT_TYPES: ReadonlySet<unknown> = new Set(["output", "temp"]);

/**
 * Only a job's own outputs are fetched: never an input file (another job's uploaded edit
 * image), nor a name or subfolder that climbs out of the output folders, whatever the server says.
 */
function isJobOutput(image: ImageRef): boolean {
  if (!OUTPUT_TYPES.has(image.type) || typeof image.subfolder !== "string") return false;
  const nameIsPlain = image.filename !== "" && !/[/\\]/.test(image.filename) && image.filename !== "." && image.filename !== "..";
  const subfolderStaysInside = !/^[/\\]/.test(image.subfolder) && !image.subfolder.split(/[/\\]/).includes("..");
  return nameIsPlain && subfolderStaysInside;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
