/**
 * The bytes as a Buffer over the same memory, without copying them: Buffer.from(uint8Array)
 * would copy, and messages from RPC or the stream hold megabytes of image.
 */
export function bufferView(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
