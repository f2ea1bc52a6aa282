import type { Metadata } from "sharp";
import { loadSharp } from "./image-library.ts";
import { ErrorCode, type InputImage, type Refusal } from "@orvado/proto";
import { bufferView, refusal } from "@orvado/core";

// The uploads of an image edit, read by sharp before anything is reserved: each must be
// a PNG, JPEG or WebP within the pixel bounds, and a mask a PNG with transparency of the
// first image's size (OpenAI's rule). A file that is none of these is a 400, never a job.

/** Longest side of an input image; a 4032x3024 phone photo fits, a 10000 px scan does not. */
export const EDIT_INPUT_MAX_SIDE = 4096;
/** Pixels of an input image: what sharp may decode (its limitInputPixels) for one file. */
export const EDIT_INPUT_MAX_PIXELS = 4096 * 4096;

const FORMATS = new Set(["png", "jpeg", "webp"]);

export interface EditInputs {
  images: Buffer[];
  mask?: Buffer;
}

type Read = { ok: true; inputs: EditInputs } | { ok: false; refusal: Refusal };

interface Dimensions {
  width: number;
  height: number;
}

const refuse = (message: string): Read => ({ ok: false, refusal: refusal(ErrorCode.INVALID_FIELD, message) as Refusal });

export async function readEditInputs(images: InputImage[], mask: InputImage | undefined): Promise<Read> {
  const sizes: Dimensions[] = [];
  for (const [index, image] of images.entries()) {
    const name = images.length === 1 ? "image" : `image ${index + 1} of ${images.length}`;
    const read = await dimensionsOf(image.data, name, FORMATS);
    if (typeof read === "string") return refuse(read);
    sizes.push(read);
  }
  if (mask) {
    const read = await dimensionsOf(mask.data, "mask", new Set(["png"]), true);
    if (typeof read === "string") return refuse(read);
    const first = sizes[0]!;
    if (read.width !== first.width || read.height !== first.height) {
      return refuse(`The mask is ${read.width}x${read.height}; it must have the first image's size, ${first.width}x${first.height}`);
    }
  }
  return { ok: true, inputs: { images: images.map((image) => bufferView(image.data)), ...(mask && { mask: bufferView(mask.data) }) } };
}

/** The file's size, or why it is refused. Only the header is read here; nothing is decoded. */
async function dimensionsOf(bytes: Uint8Array, name: string, formats: ReadonlySet<string>, needsAlpha = false): Promise<Dimensions | string> {
  const allowed = [...formats].map((format) => format.toUpperCase()).join(", ");
  let meta: Metadata;
  const sharp = await loadSharp();
  try {
    meta = await sharp(bytes, { limitInputPixels: EDIT_INPUT_MAX_PIXELS }).metadata();
  } catch {
    return `The ${name} is not an image (${allowed} expected)`;
  }
  const { format, width, height } = meta;
  if (!format || !formats.has(format) || !width || !height) return `The ${name} is ${format ? `a ${format.toUpperCase()} file` : "not an image"}; ${allowed} expected`;
  if (Math.max(width, height) > EDIT_INPUT_MAX_SIDE || width * height > EDIT_INPUT_MAX_PIXELS) {
    return `The ${name} is ${width}x${height}; an input image may be at most ${EDIT_INPUT_MAX_SIDE} px on its longest side`;
  }
  if (needsAlpha && !meta.hasAlpha) return `The ${name} has no transparency; its transparent pixels mark the area to edit`;
  return { width, height };
}

