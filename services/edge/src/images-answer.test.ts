import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { GeneratedImageSchema, type GeneratedImage } from "@orvado/proto";
import { imagesAnswerBody, isPlainBase64 } from "./images-answer.ts";

const b64 = (value: string): GeneratedImage => create(GeneratedImageSchema, { width: 1, height: 1, content: { case: "b64Json", value } });
const url = (value: string): GeneratedImage => create(GeneratedImageSchema, { width: 1, height: 1, content: { case: "urlPath", value } });

describe("imagesAnswerBody", () => {
  it("is the JSON of {created, data} with each image's b64_json or url", () => {
    const png = randomBytes(16_049).toString("base64");
    const text = imagesAnswerBody(1_700_000_000n, [b64(png), url("/v1/files/img_1.png?e=2&sig=x")], "https://gw.example").toString("utf8");
    expect(JSON.parse(text)).toEqual({ created: 1_700_000_000, data: [{ b64_json: png }, { url: "https://gw.example/v1/files/img_1.png?e=2&sig=x" }] });
    expect(text).toBe(JSON.stringify(JSON.parse(text)));
  });

  it("stays valid JSON, with the same value, whatever a b64_json holds", () => {
    for (const odd of ['ab"c', "ab\\c", "ab\ncd", "ab\u0001c", "aGVs\"G8gd29ybGQhIQ==", "é€😀", "</script>", ""]) {
      const text = imagesAnswerBody(1n, [b64(odd)], "").toString("utf8");
      expect(JSON.parse(text)).toEqual({ created: 1, data: [{ b64_json: odd }] });
    }
  });
});

describe("imagesAnswerBody's bytes", () => {
  it("are exactly the JSON text, with non-ASCII URLs in UTF-8 and several images", () => {
    const images = [b64(randomBytes(3).toString("base64")), url("/v1/files/é.png"), b64('x"y'), b64(randomBytes(30).toString("base64"))];
    const body = imagesAnswerBody(42n, images, "https://gw.example");
    const expected = JSON.stringify({ created: 42, data: images.map((image) => (image.content.case === "b64Json" ? { b64_json: image.content.value } : { url: `https://gw.example${image.content.value}` })) });
    expect(body.equals(Buffer.from(expected, "utf8"))).toBe(true);
    expect(imagesAnswerBody(7n, [], "").toString()).toBe('{"created":7,"data":[]}');
  });
});

describe("isPlainBase64", () => {
  it("takes what Buffer encodes, of any length", () => {
    for (const length of [0, 1, 2, 3, 4, 100, 16_049, 3_300_000]) expect(isPlainBase64(randomBytes(length).toString("base64"))).toBe(true);
  });

  it("refuses any character JSON would escape, and anything not padded to whole quads", () => {
    const good = Buffer.from("hello world!!").toString("base64");
    for (const bad of ['"', "\\", "\n", "\u0001", "\u007f", "é", "😀", " "]) {
      expect(isPlainBase64(good.slice(0, 4) + bad + good.slice(5))).toBe(false);
    }
    // Above the reused decoding space (1 MB), near the end of a photo-sized image.
    const photo = randomBytes(3_300_000).toString("base64");
    expect(isPlainBase64(photo.slice(0, -9) + '"' + photo.slice(-8))).toBe(false);
    expect(isPlainBase64("abc")).toBe(false);
    expect(isPlainBase64("ab=c")).toBe(false);
  });
});
