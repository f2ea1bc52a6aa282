import type { FastifyRequest } from "fastify";
import type { Multipart } from "@fastify/multipart";
import { ErrorCode } from "@orvado/proto";
import type { EditUploadLimits } from "./config.ts";
import { BOOLEAN_FIELDS, EDIT_FILE_FIELDS, INTEGER_FIELDS } from "@orvado/core/image-request";
import { parsePlainInteger } from "./plain-integer.ts";

// The multipart/form-data body of an image edit (OpenAI's POST /v1/images/edits): files
// named image or image[] (one or several), an optional mask, and text fields. The text
// fields come back shaped as a generation's JSON body, so one checker judges both; what
// the files hold is generation's to judge (edit-inputs.ts). Every part is bounded while
// it streams in: a file's bytes, all files' bytes, the count of files and of fields.

export interface UploadedFile {
  data: Buffer;
  mediaType: string;
}

export interface EditUpload {
  /** The text fields, with the integer and boolean ones read as such, for checkImageRequestBody. */
  fields: Record<string, unknown>;
  images: UploadedFile[];
  mask?: UploadedFile;
}

export type UploadRead = { ok: true; upload: EditUpload } | { ok: false; code: ErrorCode; message: string };

const FILE_PARTS: ReadonlyMap<string, "image" | "mask"> = new Map(Object.entries(EDIT_FILE_FIELDS).map(([name, field]) => [name, field.role]));
/** Text fields of an edit are few; 32 leaves room for the OpenAI fields still to come. */
const MAX_FIELDS = 32;
/** A prompt of 32,000 characters is at most 128 kB of UTF-8. */
const MAX_FIELD_BYTES = 128 * 1024;

const fail = (code: ErrorCode, message: string): UploadRead => ({ ok: false, code, message });
const quoted = (name: string) => JSON.stringify(name.slice(0, 100));

export async function readEditUpload(request: FastifyRequest, limits: EditUploadLimits): Promise<UploadRead> {
  // A Map, so that a field named "__proto__" is a field like any other (and then an unknown one).
  const fields = new Map<string, unknown>();
  const images: UploadedFile[] = [];
  let mask: UploadedFile | undefined;
  let totalBytes = 0;
  try {
    const parts = request.parts({
      limits: { fileSize: limits.maxFileBytes, files: limits.maxImages + 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: limits.maxImages + 1 + MAX_FIELDS },
    });
    for await (const part of parts) {
      const refused = part.type === "file" ? checkFilePart(part.fieldname, images.length, mask !== undefined, limits) : checkTextPart(part, fields);
      if (refused) return refused;
      if (part.type === "field") {
        fields.set(part.fieldname, textFieldValue(part.fieldname, part.value as string));
        continue;
      }
      const file = { data: await part.toBuffer(), mediaType: part.mimetype };
      totalBytes += file.data.length;
      if (totalBytes > limits.maxTotalBytes) return fail(ErrorCode.BODY_TOO_LARGE, `The files of an edit may total at most ${limits.maxTotalBytes} bytes`);
      if (FILE_PARTS.get(part.fieldname) === "mask") mask = file;
      else images.push(file);
    }
  } catch (error) {
    return uploadError(error, limits);
  }
  return { ok: true, upload: { fields: Object.fromEntries(fields), images, ...(mask && { mask }) } };
}

/** A text part as a JSON body would carry it: integers and booleans read from their plain text, anything else left for the contract to refuse. */
function textFieldValue(name: string, text: string): unknown {
  if (INTEGER_FIELDS.has(name)) return parsePlainInteger(text) ?? text;
  if (BOOLEAN_FIELDS.has(name)) return text === "true" ? true : text === "false" ? false : text;
  return text;
}

function checkFilePart(name: string, imageCount: number, hasMask: boolean, limits: EditUploadLimits): UploadRead | null {
  if (!FILE_PARTS.has(name)) return fail(ErrorCode.UNKNOWN_FIELD, `Unknown file field ${quoted(name)}; an edit takes files named image (or image[]) and mask`);
  const role = FILE_PARTS.get(name);
  if (role === "mask" && hasMask) return fail(ErrorCode.INVALID_FIELD, "mask is sent twice; an edit takes one mask");
  if (role === "image" && imageCount >= limits.maxImages) return fail(ErrorCode.INVALID_FIELD, `An edit takes at most ${limits.maxImages} images`);
  return null;
}

function checkTextPart(part: Extract<Multipart, { type: "field" }>, fields: Map<string, unknown>): UploadRead | null {
  const name = part.fieldname;
  if (FILE_PARTS.has(name)) return fail(ErrorCode.INVALID_FIELD, `${name} must be a file (multipart/form-data file part), not text`);
  if (part.valueTruncated || part.fieldnameTruncated) return fail(ErrorCode.INVALID_FIELD, `The field ${quoted(name)} is longer than ${MAX_FIELD_BYTES} bytes`);
  if (typeof part.value !== "string") return fail(ErrorCode.INVALID_FIELD, `The field ${quoted(name)} must be text`);
  if (fields.has(name)) return fail(ErrorCode.INVALID_FIELD, `The field ${quoted(name)} is sent twice`);
  return null;
}

/** The plugin's own refusals (limits, a broken body) in the error shape of docs/api.md#the-error-body. */
function uploadError(error: unknown, limits: EditUploadLimits): UploadRead {
  const code = (error as { code?: string }).code;
  if (code === "FST_REQ_FILE_TOO_LARGE") return fail(ErrorCode.BODY_TOO_LARGE, `A file is larger than ${limits.maxFileBytes} bytes, the most one file of an edit may be`);
  if (code === "FST_FILES_LIMIT") return fail(ErrorCode.INVALID_FIELD, `An edit takes at most ${limits.maxImages} images and one mask`);
  if (code === "FST_FIELDS_LIMIT" || code === "FST_PARTS_LIMIT") return fail(ErrorCode.INVALID_FIELD, `An edit takes at most ${MAX_FIELDS} text fields`);
  const detail = error instanceof Error ? error.message.slice(0, 200) : "unreadable";
  return fail(ErrorCode.INVALID_REQUEST, `The multipart/form-data body could not be read (${detail})`);
}
