// Where finished images live until their temporary link runs out. The edge
// streams them out, so `open` hands back a stream rather than the bytes.

export interface StoredImage {
  contentType: string;
  size: number;
  stream: NodeJS.ReadableStream;
}

export interface AddOptions {
  /** When the image's link expires: a store may free its space any time after this. */
  expiresAt: Date;
}

export interface ImageStore {
  /** Stores a new image and resolves, once it is durable, with the id it can be opened by. */
  add(bytes: Buffer, contentType: string, options: AddOptions): Promise<string>;
  /** Null when no image is stored under the id. */
  open(imageId: string): Promise<StoredImage | null>;
  /** Deleting an id that is not stored is not an error. */
  delete(imageId: string): Promise<void>;
  /** Frees the space of expired images that delete() could only mark; returns how many units (files, segments) it removed. */
  reclaim?(): Promise<number>;
  /** Lets writes in flight finish and releases files or connections. */
  close?(): Promise<void> | void;
}

const IMAGE_ID_PATTERN = /^img_[A-Za-z0-9_-]{10,64}$/;

export function isImageId(text: string): boolean {
  return IMAGE_ID_PATTERN.test(text);
}

/** Ids become file names and URL paths, so anything outside the pattern is refused outright. */
export function assertImageId(imageId: string): void {
  if (!isImageId(imageId)) throw new InvalidImageIdError(imageId);
}

export class InvalidImageIdError extends Error {
  constructor(imageId: string) {
    // The id is quoted through JSON so control characters cannot forge log lines.
    super(`Invalid image id ${JSON.stringify(imageId.slice(0, 100))}`);
    this.name = "InvalidImageIdError";
  }
}

/**
 * How much of a stored image one read takes: a download moves the image in about this
 * many steps, each one RPC message (docs/design-choices.md#image-reads-in-large-chunks).
 */
export const READ_CHUNK_BYTES = 1024 * 1024;
