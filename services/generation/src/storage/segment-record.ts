import { randomBytes } from "node:crypto";
import { randomBase64url } from "@orvado/core";

// The on-disk shape of one image in a segment file, and the image id that says
// where it is. An id names its segment and offset, so opening an image is one
// read of its header: no index to keep, nothing to rebuild after a crash.
//
// Record: a 40-byte header, then the image's bytes.
//   0  4  magic "OVI1"
//   4  1  flags (bit 0: deleted)
//   5  1  content type (CONTENT_TYPE_CODES)
//   6  2  reserved, zero
//   8  4  the image's length in bytes (uint32 LE)
//  12  8  when its link expires, ms since the epoch (float64 LE; whole numbers)
//  20 16  the id's random part, ASCII: a forged or stale id never matches
//  36  4  reserved, zero

export const RECORD_HEADER_BYTES = 40;
export const MAX_IMAGE_BYTES = 0xffff_ffff;
export const DELETED_FLAG_OFFSET = 4;
const MAGIC = Buffer.from("OVI1", "latin1");
const DELETED = 1;

const CONTENT_TYPE_CODES: ReadonlyMap<string, number> = new Map([
  ["image/png", 1],
  ["image/jpeg", 2],
  ["image/webp", 3],
]);
const CONTENT_TYPES_BY_CODE: ReadonlyMap<number, string> = new Map([...CONTENT_TYPE_CODES].map(([type, code]) => [code, type]));

export interface RecordHeader {
  contentType: string;
  length: number;
  expiresAtMs: number;
  random: string;
  deleted: boolean;
}

/** Throws for a content type the store does not keep, before anything is written. */
function contentTypeCode(contentType: string): number {
  const code = CONTENT_TYPE_CODES.get(contentType);
  if (code === undefined) throw new Error(`Unsupported image content type ${JSON.stringify(contentType)}`);
  return code;
}

export function encodeHeader(header: Omit<RecordHeader, "deleted">): Buffer {
  const buffer = Buffer.alloc(RECORD_HEADER_BYTES);
  MAGIC.copy(buffer, 0);
  buffer[5] = contentTypeCode(header.contentType);
  buffer.writeUInt32LE(header.length, 8);
  buffer.writeDoubleLE(header.expiresAtMs, 12);
  buffer.write(header.random, 20, 16, "latin1");
  return buffer;
}

/** Null for anything that is not a whole, well-formed header (a torn write at a crashed segment's end). */
export function decodeHeader(buffer: Buffer): RecordHeader | null {
  if (buffer.length < RECORD_HEADER_BYTES || !buffer.subarray(0, 4).equals(MAGIC)) return null;
  const contentType = CONTENT_TYPES_BY_CODE.get(buffer[5]!);
  if (contentType === undefined) return null;
  return {
    contentType,
    length: buffer.readUInt32LE(8),
    expiresAtMs: buffer.readDoubleLE(12),
    random: buffer.toString("latin1", 20, 36),
    deleted: (buffer[4]! & DELETED) !== 0,
  };
}

export const DELETED_FLAGS = Buffer.from([DELETED]);

// ---- Image ids: img_<16 random>_<segment>_<offset base 36> ----

/** 12 base-36 characters: the segment's creation time in ms (9), then 3 random ones against a same-ms clash between processes. */
export const SEGMENT_NAME = /^[0-9a-z]{12}$/;
const SEGMENT_IMAGE_ID = /^img_([A-Za-z0-9_-]{16})_([0-9a-z]{12})_([0-9a-z]{1,10})$/;

export interface SegmentLocation {
  random: string;
  segment: string;
  offset: number;
}

export function newSegmentName(nowMs: number): string {
  const random = (randomBytes(2).readUInt16LE(0) % 36 ** 3).toString(36).padStart(3, "0");
  return nowMs.toString(36).padStart(9, "0") + random;
}

/** When a segment was created, read back from its name. */
export function segmentCreatedAtMs(segment: string): number {
  return parseInt(segment.slice(0, 9), 36);
}

export function newRecordRandom(): string {
  return randomBase64url(12);
}

export function segmentImageId(location: SegmentLocation): string {
  return `img_${location.random}_${location.segment}_${location.offset.toString(36)}`;
}

/** Null for an id of another shape (an image stored as its own file by an earlier version). */
export function parseSegmentImageId(imageId: string): SegmentLocation | null {
  const match = SEGMENT_IMAGE_ID.exec(imageId);
  if (!match) return null;
  return { random: match[1]!, segment: match[2]!, offset: parseInt(match[3]!, 36) };
}
