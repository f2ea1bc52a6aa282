import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DefaultGeneratedFile } from "ai";
import { imageBytes } from "./image-bytes.ts";

describe("imageBytes", () => {
  const bytes = randomBytes(3000);

  it("decodes a file the SDK holds as base64 natively, without the SDK's per-byte decoding", () => {
    const file = new DefaultGeneratedFile({ data: bytes.toString("base64"), mediaType: "image/png" });
    expect(Buffer.from(imageBytes(file)).equals(bytes)).toBe(true);
    // The SDK's lazy conversion never ran: the file still holds only its base64 text.
    expect((file as unknown as { uint8ArrayData?: Uint8Array }).uint8ArrayData).toBeUndefined();
  });

  it("decodes URL-safe base64 as the SDK does", () => {
    const file = new DefaultGeneratedFile({ data: bytes.toString("base64url"), mediaType: "image/png" });
    expect(Buffer.from(imageBytes(file)).equals(bytes)).toBe(true);
    expect(Buffer.from(imageBytes(file)).equals(Buffer.from(new DefaultGeneratedFile({ data: bytes.toString("base64url"), mediaType: "image/png" }).uint8Array))).toBe(true);
  });

  it("hands back the bytes of a file the SDK holds as bytes", () => {
    const file = new DefaultGeneratedFile({ data: new Uint8Array(bytes), mediaType: "image/png" });
    expect(Buffer.from(imageBytes(file)).equals(bytes)).toBe(true);
    expect((file as unknown as { base64Data?: string }).base64Data).toBeUndefined();
  });
});
