import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { GeneratedImageSchema, type GeneratedImage } from "@orvado/proto";
import { imagesAnswerJson, isPlainBase64 } from "./images-answer.ts";

const b64 = (value: string): GeneratedImage => create(GeneratedImageSchema, { width: 1, height: 1, content: { case: "b64Json", value } });
const url = (value: string): GeneratedImage => create(GeneratedImageSchema, { width: 1, height: 1, content: { case: "urlPath", value } });

describe("imagesAnswerJson", () => {
  it("is the JSON of {created, data} with each image's b64_json or url", () => {
    const png = randomBytes(16_049).toString("base64");
    const text = imagesAnswerJson(1_700_000_000n, [b64(png), url("/v1/files/img_1.png?e=2&sig=x")], "https://gw.example");
    expect(JSON.parse(text)).toEqual({ created: 1_700_000_000, data: [{ b64_json: png }, { url: "https://gw.example/v1/files/img_1.png?e=2&sig=x" }] });
    expect(text).toBe(JSON.stringify(JSON.parse(text)));
  });

  it("stays valid JSON, with the same value, whatever a b64_json holds", () => {
    for (const odd of ['ab"c', "ab\\c", "ab\ncd", "ab\u0001c", "aGVs\"G8gd29ybGQhIQ==", "é€😀", "</script>", ""]) {
      const text = imagesAnswerJson(1n, [b64(odd)], "");
      expect(JSON.parse(text)).toEqual({ created: 1, data: [{ b64_json: odd }] });
    }
  });
});

describe("isPlainBase64", () => {
  it("takes what Buffer encodes, of any length", () => {
    for (const length of [0, 1, 2, 3, 4, 100, 16_049]) expect(isPlainBase64(randomBytes(length).toString("base64"))).toBe(true);
  });

  it("refuses any character JSON would escape, and anything not padded to whole quads", () => {
    const good = Buffer.from("hello world!!").toString("base64");
    for (const bad of ['"', "\\", "\n", "\u0001", "\u007f", "é", "😀", " "]) {
      expect(isPlainBase64(good.slice(0, 4) + bad + good.slice(5))).toBe(false);
    }
    expect(isPlainBase64("abc")).toBe(false);
    expect(isPlainBase64("ab=c")).toBe(false);
  });
});
