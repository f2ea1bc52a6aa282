import type { GeneratedFile } from "ai";

/**
 * An image's bytes from the AI SDK's file. When the provider answered base64
 * (OpenAI-style `b64_json`, Gemini's inline data, Imagen), the SDK's own
 * `uint8Array` decodes it in JavaScript, one callback per byte: about 100 ms of
 * CPU on the event loop for a 1.5-MB image, against 0.8 ms for Node's native
 * decoder. So the file's base64 text is decoded with Buffer when the file holds
 * it (a field the SDK keeps private; image-bytes.test.ts pins it against the
 * installed version), and the public getter is used otherwise.
 */
export function imageBytes(file: GeneratedFile): Uint8Array {
  const base64 = (file as unknown as { base64Data?: unknown }).base64Data;
  return typeof base64 === "string" ? Buffer.from(base64, "base64") : file.uint8Array;
}
