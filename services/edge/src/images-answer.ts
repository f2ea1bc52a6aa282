import type { GeneratedImage } from "@orvado/proto";

// The body of a successful images answer (spec: `{created, data: [{url} | {b64_json}]}`).

/** One item of `data`: the image's base64, or the edge's public base + the signed path generation returned. */
export function answerItem(image: GeneratedImage, base: string): { b64_json: string } | { url: string } {
  return image.content.case === "b64Json" ? { b64_json: image.content.value } : { url: `${base}${image.content.value}` };
}

const B64_OPEN = '{"b64_json":"';
const B64_CLOSE = '"}';

/**
 * The answer as UTF-8 JSON bytes, written straight into one Buffer. A `b64_json`
 * value that is plain base64 is copied in as it is: JSON.stringify would scan
 * every character for one to escape (its cost grows with the image, to
 * milliseconds for a photo-sized one), where base64 never has one, and a string
 * built by concatenation would be copied twice more on its way out (flattened,
 * then encoded for the socket). Anything else goes through JSON.stringify, so the
 * body is valid JSON whatever generation sent.
 */
export function imagesAnswerBody(createdUnix: bigint, data: GeneratedImage[], base: string): Buffer {
  const items = data.map((image) => {
    const item = answerItem(image, base);
    return "b64_json" in item && isPlainBase64(item.b64_json) ? { plainBase64: true, text: item.b64_json } : { plainBase64: false, text: JSON.stringify(item) };
  });
  const head = `{"created":${Number(createdUnix)},"data":[`;
  let length = head.length + "]}".length + Math.max(0, items.length - 1);
  for (const item of items) length += item.plainBase64 ? B64_OPEN.length + item.text.length + B64_CLOSE.length : Buffer.byteLength(item.text);
  const body = Buffer.allocUnsafe(length);
  let at = body.write(head, 0, "latin1");
  items.forEach((item, index) => {
    if (index > 0) at += body.write(",", at, "latin1");
    if (item.plainBase64) {
      at += body.write(B64_OPEN, at, "latin1");
      at += body.write(item.text, at, "latin1");
      at += body.write(B64_CLOSE, at, "latin1");
    } else {
      at += body.write(item.text, at, "utf8");
    }
  });
  body.write("]}", at, "latin1");
  return body;
}

// Decoding space for isPlainBase64, reused so that checking an image allocates
// nothing. Images larger than this are checked with a Buffer of their own.
const SCRATCH_BYTES = 1 << 20;
let scratch: Buffer | null = null;

/**
 * True when every character is from a base64 alphabet (nothing JSON must escape),
 * checked natively: Node's decoder skips any other character, so the decoded length
 * falls short of what the text's length promises.
 */
export function isPlainBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const promised = Buffer.byteLength(text, "base64");
  if (promised > SCRATCH_BYTES) return Buffer.from(text, "base64").length === promised;
  scratch ??= Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  return scratch.write(text, 0, promised, "base64") === promised;
}
