// Where finished images live until their temporary link runs out. The edge
// streams them out, so `open` hands back a stream rather than the bytes.

export interface StoredImage {
  contentType: string;
  size: number;
  stream: NodeJS.ReadableStream;
}

export interface PutOptions {
  /**
   * The caller made this id just now and records it only after put returns
   * (jobs do), so no earlier image is stored under it and nobody reads it
   * meanwhile: the store may skip replacing one under another type, and may
   * write in place instead of through a temporary name.
   */
  fresh?: boolean;
}

export interface ImageStore {
  /** Stores the image under the id, replacing any image stored there before. */
  put(imageId: string, bytes: Buffer, contentType: string, options?: PutOptions): Promise<void>;
  /** Null when no image is stored under the id. */
  open(imageId: string): Promise<StoredImage | null>;
  /** Deleting an id that is not stored is not an error. */
  delete(imageId: string): Promise<void>;
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
