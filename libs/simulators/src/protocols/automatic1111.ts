import { randomInt } from "node:crypto";
import sharp from "sharp";
import type { Route, SimReply, SimRequest, SimulatorCore } from "../server.ts";
import { malformedReply } from "../server.ts";
import { asRecord } from "./common.ts";
import { A1111Job, JobQueue, type JobShape } from "./automatic1111-job.ts";

// AUTOMATIC1111's web UI API (modules/api/api.py and models.py), which Forge and SD.Next
// keep: POST /sdapi/v1/txt2img and /sdapi/v1/img2img take JSON (prompt, negative_prompt,
// width, height, seed, steps, sampler_name, batch_size, n_iter; img2img adds init_images and
// mask as base64, inpainting_fill, inpainting_mask_invert, denoising_strength) and answer
// {images: [base64 PNG], parameters, info: "<JSON text>"}, a grid first when one job makes
// several images (info's index_of_first_image says where the images start).
// GET /sdapi/v1/progress describes the running job (progress 0–1, eta_relative, state,
// current_image as a base64 preview unless ?skip_current_image=true); POST
// /sdapi/v1/interrupt ends it early. Errors are the API's handler's
// {error, detail, body, errors}; a body of the wrong types is FastAPI's 422 {detail: [...]}.

const SAMPLERS = new Set(["Euler a", "Euler", "LMS", "Heun", "DPM2", "DPM++ 2M", "DPM++ 2M Karras", "DPM++ SDE", "DPM++ 2M SDE", "DDIM", "UniPC"]);
const DEFAULT_STEPS = 20;
const PREVIEW_SIDE = 64;
const MAX_SEED = 2 ** 32 - 1;

const INTEGER_FIELDS = ["width", "height", "steps", "batch_size", "n_iter", "seed", "inpainting_fill", "inpainting_mask_invert", "mask_blur"] as const;
const STRING_FIELDS = ["prompt", "negative_prompt", "sampler_name", "sampler_index", "mask"] as const;

/** The key of a request: "user:password" of HTTP basic auth (--api-auth), or a bearer token (a proxy in front). */
export function basicOrBearer(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  const basic = /^Basic\s+(.+)$/i.exec(text ?? "");
  if (basic) return Buffer.from(basic[1]!, "base64").toString("utf8");
  return text?.replace(/^Bearer\s+/i, "");
}

export function automatic1111Routes(sim: SimulatorCore): Route[] {
  const queue = new JobQueue();
  const generate = (kind: JobShape["kind"]) => (req: SimRequest) => {
    sim.record(kind, req);
    return answerJob(sim, queue, kind, req);
  };
  return [
    { name: "txt2img", method: "POST", pattern: /^\/sdapi\/v1\/txt2img$/, handle: generate("txt2img") },
    { name: "img2img", method: "POST", pattern: /^\/sdapi\/v1\/img2img$/, handle: generate("img2img") },
    {
      name: "progress",
      method: "GET",
      pattern: /^\/sdapi\/v1\/progress$/,
      handle: async (req) => {
        sim.record("progress", req);
        return { status: 200, json: await progressOf(queue.current, req.url.searchParams.get("skip_current_image") === "true") };
      },
    },
    {
      name: "interrupt",
      method: "POST",
      pattern: /^\/sdapi\/v1\/interrupt$/,
      handle: async (req) => {
        sim.record("interrupt", req);
        queue.current?.interrupt();
        return { status: 200, json: {} };
      },
    },
  ];
}

async function answerJob(sim: SimulatorCore, queue: JobQueue, kind: JobShape["kind"], req: SimRequest): Promise<SimReply> {
  if (req.body === undefined || typeof req.body !== "object" || Array.isArray(req.body)) return unprocessable(["body"], "value is not a valid dict", "type_error.dict");
  const body = asRecord(req.body);
  const typeError = wrongType(body);
  if (typeError) return typeError;
  const sampler = body.sampler_name ?? body.sampler_index ?? "Euler";
  if (!SAMPLERS.has(String(sampler))) return apiError(404, "HTTPException", "Sampler not found");
  if (kind === "img2img") {
    const inputs = await readInputs(body);
    if (typeof inputs === "string") return apiError(inputs === "Init image not found" ? 404 : 500, "HTTPException", inputs);
    sim.sawInputs(inputs.images, inputs.mask);
  }
  const effective = sim.effective(body.prompt);
  if (effective.mode === "hang") return { hang: true };
  if (effective.mode === "malformed" || effective.mode === "fail") await sim.wait(effective.delayMs, req);
  if (effective.mode === "malformed") return malformedReply();
  if (effective.mode === "fail") return apiError(sim.behaviour.failStatus, "OutOfMemoryError", "", "CUDA out of memory. Tried to allocate 2.00 GiB");
  const shape: JobShape = {
    kind,
    width: (body.width as number | undefined) ?? 512,
    height: (body.height as number | undefined) ?? 512,
    steps: Math.max(1, (body.steps as number | undefined) ?? DEFAULT_STEPS),
    batchSize: Math.max(1, (body.batch_size as number | undefined) ?? 1),
    rounds: Math.max(1, (body.n_iter as number | undefined) ?? 1),
    effective,
  };
  const job = new A1111Job(shape);
  return { status: 200, json: await queue.run(job, sim, () => jobAnswer(sim, job, body)) };
}

/** A body field of the wrong type, answered as FastAPI's validation error. */
function wrongType(body: Record<string, unknown>): SimReply | null {
  for (const field of INTEGER_FIELDS) {
    if (body[field] !== undefined && !Number.isInteger(body[field])) return unprocessable(["body", field], "value is not a valid integer", "type_error.integer");
  }
  for (const field of STRING_FIELDS) {
    if (body[field] !== undefined && body[field] !== null && typeof body[field] !== "string") return unprocessable(["body", field], "str type expected", "type_error.str");
  }
  return null;
}

/** img2img's init images and mask decoded as A1111 decodes them, or its error. */
async function readInputs(body: Record<string, unknown>): Promise<{ images: number; mask: boolean } | string> {
  const images = body.init_images;
  if (!Array.isArray(images) || images.length === 0) return "Init image not found";
  const encoded = [...images, ...(typeof body.mask === "string" && body.mask ? [body.mask] : [])];
  for (const item of encoded) {
    if (typeof item !== "string" || !(await isImage(item))) return "Invalid encoded image";
  }
  return { images: images.length, mask: typeof body.mask === "string" && body.mask !== "" };
}

async function isImage(encoded: string): Promise<boolean> {
  const base64 = encoded.startsWith("data:image/") ? encoded.slice(encoded.indexOf(",") + 1) : encoded;
  try {
    const meta = await sharp(Buffer.from(base64, "base64")).metadata();
    return Boolean(meta.width && meta.height);
  } catch {
    return false;
  }
}

async function jobAnswer(sim: SimulatorCore, job: A1111Job, body: Record<string, unknown>) {
  const { width, height, batchSize, steps } = job.shape;
  const count = job.imagesMade;
  const asked = typeof body.seed === "number" && body.seed >= 0 ? body.seed : randomInt(MAX_SEED);
  const seeds = Array.from({ length: count }, (_, index) => asked + index);
  const prompt = String(body.prompt ?? "");
  const images = await Promise.all(seeds.map((seed) => sim.render({ width, height }, job.shape.effective, `${prompt}#${seed}`)));
  // A1111 puts a grid of the images first when a job makes several, unless told not to (return_grid).
  const grid = count > 1 && asRecord(body.override_settings).return_grid !== false;
  const answerImages = grid ? [await sim.render({ width, height }, job.shape.effective, `${prompt}#grid`), ...images] : images;
  const sendImages = body.send_images !== false;
  const info = {
    prompt,
    all_prompts: seeds.map(() => prompt),
    negative_prompt: String(body.negative_prompt ?? ""),
    seed: asked,
    all_seeds: seeds,
    width,
    height,
    sampler_name: String(body.sampler_name ?? "Euler"),
    steps,
    batch_size: batchSize,
    index_of_first_image: grid ? 1 : 0,
    job_timestamp: job.timestamp,
    infotexts: seeds.map((seed) => `${prompt}\nSteps: ${steps}, Seed: ${seed}, Size: ${width}x${height}`),
  };
  const parameters = { ...body, ...(job.shape.kind === "img2img" && { init_images: null, mask: null }) };
  return { images: sendImages ? answerImages.map((png) => png.toString("base64")) : [], parameters, info: JSON.stringify(info) };
}

/** /sdapi/v1/progress: idle is progress 0 and job_count 0; a running job has its fraction, state and preview. */
async function progressOf(job: A1111Job | null, skipImage: boolean) {
  if (!job) return { progress: 0, eta_relative: 0, state: state(null), current_image: null, textinfo: null };
  const progress = job.progress;
  const elapsed = (Date.now() - job.startedAt) / 1000;
  const preview = job.step > 0 && !skipImage ? await previewOf(job) : null;
  return { progress, eta_relative: elapsed / progress - elapsed, state: state(job), current_image: preview, textinfo: null };
}

function state(job: A1111Job | null) {
  return {
    skipped: false,
    interrupted: job?.interrupted ?? false,
    job: job ? `scripts_${job.shape.kind}` : "",
    job_count: job ? job.shape.rounds : 0,
    job_timestamp: job?.timestamp ?? "0",
    job_no: job ? job.round : 0,
    sampling_step: job?.step ?? 0,
    sampling_steps: job?.shape.steps ?? 0,
  };
}

/** A small preview that changes with the step, as A1111's live preview does. */
async function previewOf(job: A1111Job): Promise<string> {
  const shade = Math.round((255 * job.step) / job.shape.steps);
  const png = await sharp({ create: { width: PREVIEW_SIDE, height: PREVIEW_SIDE, channels: 3, background: { r: shade, g: 64, b: 255 - shade } } })
    .png()
    .toBuffer();
  return png.toString("base64");
}

/** The API's exception handler's answer (api_middleware handle_exception). */
function apiError(status: number, error: string, detail: string, errors = `${status}: ${detail}`): SimReply {
  return { status, json: { error, detail, body: "", errors } };
}

/** FastAPI's answer to a body that does not fit the request model. */
function unprocessable(loc: string[], msg: string, type: string): SimReply {
  return { status: 422, json: { detail: [{ loc, msg, type }] } };
}
