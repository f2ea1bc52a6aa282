import type { UpstreamProgress } from "./types.ts";

// What of an upstream's progress reaches the job: every fraction, and a preview only if
// it is an image (PNG, JPEG or WebP by its own bytes, which say its media type) no larger
// than the upstream byte limit. A backend's previews come from its websocket frames or
// polled answers, which a broken or hostile server fills with anything, at any size.

type Preview = NonNullable<UpstreamProgress["preview"]>;

export function guardedProgress(listener: (progress: UpstreamProgress) => void, maxBytes: number): (progress: UpstreamProgress) => void {
  return ({ fraction, preview }) => {
    const mediaType = preview && preview.bytes.byteLength <= maxBytes ? previewMediaType(preview.bytes) : undefined;
    if (mediaType) return listener({ ...(fraction !== undefined && { fraction }), preview: { bytes: preview!.bytes, mediaType } });
    if (fraction !== undefined) listener({ fraction });
  };
}

/** The image type the bytes begin with, or undefined when they are none of the three. */
export function previewMediaType(bytes: Uint8Array): Preview["mediaType"] | undefined {
  const starts = (signature: number[], at = 0) => signature.every((byte, index) => bytes[at + index] === byte);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  return undefined;
}
