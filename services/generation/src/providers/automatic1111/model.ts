import type { ImageModelV4, ImageModelV4CallOptions, ImageModelV4File, ImageModelV4Result } from "@ai-sdk/provider";
import { IMAGE_COUNT_CEILING } from "@orvado/core";
import type { UpstreamProgress } from "../types.ts";
import { answerImages } from "./answer.ts";
import { a1111Mask } from "./mask.ts";
import { watchProgress } from "./progress.ts";
import { sizeNumbers } from "./size.ts";

// AUTOMATIC1111's API (Forge and SD.Next keep it) as an AI SDK image model, so the
// gateway calls it as any other (upstream.ts imagesFrom): a generation is one POST
// /sdapi/v1/txt2img, an edit one POST /sdapi/v1/img2img; the answer carries the images
// as base64. Meanwhile /sdapi/v1/progress is polled for the job's fraction and preview.

export interface Automatic1111Settings {
  /** The server's root (http://gpu-box:7860). */
  baseUrl: string;
  /** The Authorization header: basic for --api-auth "user:password", else a proxy's bearer token. */
  authorization: string | undefined;
  /** The checkpoint to draw with (override_settings.sd_model_checkpoint); the server's loaded one when absent. */
  checkpoint: string | undefined;
  steps: number | undefined;
  sampler: string | undefined;
  negativePrompt: string | undefined;
  /** The most images the GPU draws at once (batch_size); more are drawn in further rounds (n_iter). */
  maxBatch: number;
  pollIntervalMs: number;
  onProgress: ((progress: UpstreamProgress) => void) | undefined;
}

/** Edits: what img2img repaints of the input; A1111's own default. */
const DENOISING_STRENGTH = 0.75;
/** inpainting_fill 1 ("original"): the masked area starts from the input's own pixels. */
const FILL_FROM_ORIGINAL = 1;
/** How long the interrupt of an abandoned job may take: the job has already ended for the gateway. */
const INTERRUPT_TIMEOUT_MS = 5_000;

export class Automatic1111ImageModel implements ImageModelV4 {
  readonly specificationVersion = "v4";
  readonly provider = "automatic1111";
  /** Every image of a job goes in one call (rounds of maxBatch): the server runs one job at a time, and one call is one job to follow. */
  readonly maxImagesPerCall = IMAGE_COUNT_CEILING;

  constructor(
    readonly modelId: string,
    private readonly settings: Automatic1111Settings,
    private readonly fetch: typeof globalThis.fetch,
  ) {}

  async doGenerate(options: ImageModelV4CallOptions): Promise<ImageModelV4Result> {
    const image = options.files?.[0];
    const route = image ? "img2img" : "txt2img";
    const body = { ...this.#common(options), ...(image && (await editFields(image, options.mask))) };
    const response = await this.#call(route, body, options.abortSignal);
    const images = await answerImages(response, options.n);
    return { images, warnings: [], response: { timestamp: new Date(), modelId: this.modelId, headers: undefined } };
  }

  #common(options: ImageModelV4CallOptions) {
    const { width, height } = sizeNumbers(options.size, { width: 1024, height: 1024 });
    const { checkpoint, steps, sampler, negativePrompt } = this.settings;
    const rounds = Math.ceil(options.n / Math.max(1, this.settings.maxBatch));
    return {
      prompt: options.prompt ?? "",
      negative_prompt: negativePrompt ?? "",
      width,
      height,
      // -1: A1111 draws a random seed.
      seed: options.seed ?? -1,
      // The fewest images per round that make n in that many rounds: n=5 at 4 a round is 2 rounds of 3.
      batch_size: Math.ceil(options.n / rounds),
      n_iter: rounds,
      ...(steps !== undefined && { steps }),
      ...(sampler !== undefined && { sampler_name: sampler }),
      send_images: true,
      save_images: false,
      // No grid image in the answer (it would be one more full-size image under the byte limit).
      override_settings: { return_grid: false, ...(checkpoint && { sd_model_checkpoint: checkpoint }) },
      override_settings_restore_afterwards: true,
    };
  }

  async #call(route: string, body: object, signal: AbortSignal | undefined): Promise<Response> {
    const { onProgress, pollIntervalMs } = this.settings;
    const watch = onProgress && watchProgress({ fetch: this.fetch, url: this.#url("progress?skip_current_image=false"), headers: this.#headers(), intervalMs: pollIntervalMs, onProgress, signal });
    try {
      return await this.fetch(this.#url(route), { method: "POST", headers: { ...this.#headers(), "content-type": "application/json" }, body: JSON.stringify(body), signal });
    } catch (error) {
      // The job's or channel's limit: A1111 would go on drawing for nobody (it does not notice a client leaving), so it is told to stop.
      if (signal?.aborted) await this.#interrupt();
      throw error;
    } finally {
      watch?.stop();
    }
  }

  /** POST /sdapi/v1/interrupt, ending the job it runs: with capacity 1 on the channel, ours. */
  async #interrupt(): Promise<void> {
    await this.fetch(this.#url("interrupt"), { method: "POST", headers: this.#headers(), signal: AbortSignal.timeout(INTERRUPT_TIMEOUT_MS) }).catch(() => undefined);
  }

  #url(path: string): string {
    return `${this.settings.baseUrl.replace(/\/+$/, "")}/sdapi/v1/${path}`;
  }

  #headers(): Record<string, string> {
    return this.settings.authorization ? { authorization: this.settings.authorization } : {};
  }
}

/** img2img's inputs: the first image to start from and, with a mask, A1111's inpainting mask. */
async function editFields(image: ImageModelV4File, mask: ImageModelV4File | undefined) {
  return {
    init_images: [base64Of(image)],
    denoising_strength: DENOISING_STRENGTH,
    ...(mask && {
      mask: (await a1111Mask(bytesOf(mask))).toString("base64"),
      inpainting_fill: FILL_FROM_ORIGINAL,
      inpainting_mask_invert: 0,
      inpaint_full_res: false,
    }),
  };
}

function bytesOf(file: ImageModelV4File): Uint8Array {
  if (file.type !== "file") throw new Error("A1111 takes image bytes, not URLs");
  return typeof file.data === "string" ? Buffer.from(file.data, "base64") : file.data;
}

const base64Of = (file: ImageModelV4File): string => Buffer.from(bytesOf(file)).toString("base64");
