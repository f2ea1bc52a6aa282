import { randomInt, randomUUID } from "node:crypto";
import type { ImageModelV4, ImageModelV4CallOptions, ImageModelV4File, ImageModelV4Result } from "@ai-sdk/provider";
import { UpstreamFailure } from "../errors.ts";
import type { FactoryInput, ProviderFactory } from "../types.ts";
import { pixelSize } from "../size-shapes.ts";
import { ComfyApi } from "./api.ts";
import { PromptFollower } from "./follow.ts";
import { jobGraph, type JobValues } from "./graph.ts";
import { comfyuiSize } from "./size.ts";
import { JobProgress } from "./progress.ts";
import { openEvents } from "./socket.ts";
import type { ComfyChannel, ComfyJobGraph } from "./workflow.ts";

// ComfyUI as an AI SDK image model (ImageModelV4), so upstream.ts calls it as it calls
// every provider package. One call is one queued prompt: the channel's workflow with the
// job's values set, submitted with its own client id and prompt id, followed on the
// websocket (progress and previews to onProgress) or by polling its history, and its
// output node's images downloaded with GET /view.

/** Images per prompt (the batch size) when the channel sets no maxImagesPerCall. */
const DEFAULT_MAX_BATCH = 4;
/** Seeds are drawn below this: ComfyUI takes up to 2^64 - 1, node:crypto draws integers below 2^48. */
const MAX_SEED = 2 ** 48 - 1;

export const comfyuiFactory: ProviderFactory = (input) => {
  const comfy = input.channel.comfyui!;
  const job = input.request.edit && comfy.edit ? comfy.edit : comfy;
  const size = comfyuiSize(input.request);
  // Without a batch-size input, one prompt makes one image and n is split into prompts.
  const perPrompt = job.inputs.batchSize ? (input.channel.maxImagesPerCall ?? DEFAULT_MAX_BATCH) : 1;
  const progress = new JobProgress(Math.ceil(input.request.n / perPrompt), input.onProgress);
  return { model: new ComfyImageModel(input, job, progress), maxImagesPerCall: perPrompt, size: pixelSize(size.width, size.height) };
};

class ComfyImageModel implements ImageModelV4 {
  readonly specificationVersion = "v4";
  readonly provider = "comfyui";
  readonly modelId: string;
  readonly maxImagesPerCall = undefined;
  readonly #api: ComfyApi;
  readonly #headers: Record<string, string>;

  constructor(
    private readonly input: FactoryInput,
    private readonly job: ComfyJobGraph & Partial<NonNullable<ComfyChannel["edit"]>>,
    private readonly progress: JobProgress,
  ) {
    this.modelId = input.channel.upstreamModel ?? input.channel.workflow ?? "comfyui";
    this.#headers = input.apiKey ? { authorization: `Bearer ${input.apiKey}` } : {};
    this.#api = new ComfyApi(input.channel.baseUrl!, input.fetch, this.#headers);
  }

  async doGenerate(options: ImageModelV4CallOptions): Promise<ImageModelV4Result> {
    const onProgress = this.progress.forPrompt();
    const signal = options.abortSignal ?? new AbortController().signal;
    const [width, height] = (options.size ?? `${this.input.request.width}x${this.input.request.height}`).split("x").map(Number) as [number, number];
    const values: JobValues = {
      prompt: options.prompt ?? "",
      width,
      height,
      seed: options.seed ?? randomInt(MAX_SEED),
      batchSize: options.n,
      ...(await this.#uploads(options, signal)),
    };
    const graph = jobGraph(this.job.graph, this.job.inputs, values, this.job.image ? { image: this.job.image, mask: this.job.mask } : undefined);
    const follower = new PromptFollower({
      api: this.#api,
      graph,
      output: this.job.output,
      pollIntervalMs: this.input.channel.pollIntervalMs ?? 1000,
      onProgress,
    });
    const clientId = randomUUID();
    let promptId: string = randomUUID();
    follower.expect(promptId);
    // The socket is opened before the prompt is queued, so no message of the job is missed.
    const socket = await openEvents(
      { baseUrl: this.input.channel.baseUrl!, clientId, headers: this.#headers, signal, maxMessageBytes: this.input.maxUpstreamBytes },
      follower.handlers,
    );
    if (!socket) follower.pollFromStart();
    try {
      promptId = await this.#api.submit(graph, clientId, promptId, signal);
      follower.expect(promptId);
      const refs = await untilAborted(follower.images(promptId, signal), signal);
      const images = await Promise.all(refs.map((ref) => this.#api.view(ref, signal)));
      return { images, warnings: [], response: { timestamp: new Date(), modelId: this.modelId, headers: undefined } };
    } catch (error) {
      // Aborted while submitting too: the prompt may be queued all the same, under the id we chose.
      if (signal.aborted) await this.#api.cancel(promptId, follower.started);
      throw error;
    } finally {
      socket?.close();
    }
  }

  /** An edit's image and mask, uploaded as ComfyUI input files named after the job. */
  async #uploads(options: ImageModelV4CallOptions, signal: AbortSignal): Promise<Pick<JobValues, "image" | "mask">> {
    const image = options.files?.[0];
    if (!this.job.image || !image) return {};
    const name = `orvado-${randomUUID()}`;
    const upload = (file: ImageModelV4File, suffix: string) => {
      if (file.type !== "file") throw new UpstreamFailure("ComfyUI takes input images as bytes, not URLs");
      const bytes = typeof file.data === "string" ? Buffer.from(file.data, "base64") : file.data;
      return this.#api.upload(bytes, file.mediaType, `${name}-${suffix}.${extension(file.mediaType)}`, signal);
    };
    const [imageName, maskName] = await Promise.all([upload(image, "image"), this.job.mask && options.mask ? upload(options.mask, "mask") : undefined]);
    // Without a mask, the image's own transparency is the mask (as OpenAI's edits read it).
    return { image: imageName, mask: maskName ?? imageName };
  }
}

const extension = (mediaType: string) => (mediaType === "image/jpeg" ? "jpg" : mediaType === "image/webp" ? "webp" : "png");

/** The promise, or the signal's reason as soon as it fires (a socket wait has no fetch to abort). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
