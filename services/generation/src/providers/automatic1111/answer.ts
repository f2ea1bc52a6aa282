import { UpstreamFailure } from "../errors.ts";
import { asObject, text, type Json } from "../refusal-parts.ts";

// What an A1111 answer means. The answer was read whole under the gateway's byte limit
// (guarded-fetch.ts), so the base64 images decoded here are bounded by it too.

/**
 * The images of a txt2img or img2img answer, from info's index_of_first_image on: A1111
 * puts a grid first when one job makes several images (and extensions may add their own
 * images after the batch), so at most `count` are taken from there.
 */
export async function answerImages(response: Response, count: number): Promise<Uint8Array[]> {
  if (!response.ok) throw new UpstreamFailure(`A1111: ${await errorDetail(response)}`);
  const body = asObject(await readJson(response));
  if (!Array.isArray(body.images)) throw new UpstreamFailure("A1111: the answer has no images list");
  const first = firstImageIndex(body.info);
  return body.images.slice(first, first + count).map(decodeImage);
}

/** The server's own message: an HTTPException's detail, an exception's text (errors), or FastAPI's validation list. */
export async function errorDetail(response: Response): Promise<string> {
  const raw = await response.text().catch(() => "");
  let body: Json;
  try {
    body = asObject(JSON.parse(raw));
  } catch {
    return `HTTP ${response.status}${raw ? `: ${raw.slice(0, 300)}` : ""}`;
  }
  if (Array.isArray(body.detail)) return body.detail.map((item) => validationText(asObject(item))).join("; ");
  const message = text(body.detail) || text(body.errors) || text(asObject(body.error).message) || text(body.error);
  return message ? `${message} (HTTP ${response.status})` : `HTTP ${response.status}`;
}

function validationText(item: Json): string {
  const place = Array.isArray(item.loc) ? item.loc.join(".") : "";
  return `${place ? `${place}: ` : ""}${text(item.msg)}`;
}

async function readJson(response: Response): Promise<unknown> {
  try {
    return await response.json();
  } catch {
    throw new UpstreamFailure("A1111: the answer is not JSON");
  }
}

function firstImageIndex(info: unknown): number {
  try {
    const index = asObject(JSON.parse(text(info))).index_of_first_image;
    return typeof index === "number" && Number.isInteger(index) && index >= 0 ? index : 0;
  } catch {
    return 0;
  }
}

/** A base64 image, with or without a data: URL prefix (SD.Next may send one). */
export function decodeImage(encoded: unknown): Uint8Array {
  if (typeof encoded !== "string") throw new UpstreamFailure("A1111: an image in the answer is not base64 text");
  const comma = encoded.startsWith("data:") ? encoded.indexOf(",") : -1;
  return Buffer.from(comma >= 0 ? encoded.slice(comma + 1) : encoded, "base64");
}
