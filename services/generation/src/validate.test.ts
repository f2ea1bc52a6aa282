import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { CreateImageRequestSchema, ErrorCode } from "@orvado/proto";
import { parseCatalog } from "./catalog.ts";
import { validateImageRequest } from "./validate.ts";

// The catalog's rules for the OpenAI fields (docs/api.md): background and moderation only
// where every channel's provider takes them; the output fields' closed sets. In process.

const channel = (name: string, provider: string) =>
  provider === "sandbox"
    ? { name, provider, capacity: 1 }
    : { name, provider, upstreamModel: provider === "google" ? "gemini-2.5-flash-image" : "m", apiKeyEnv: "K", baseUrl: "https://example.test/v1", capacity: 1 };
const catalog = parseCatalog({
  models: [
    { id: "openai-only", family: "alpha", tiers: ["1K"], channels: [channel("a", "openai"), channel("b", "openai-compatible")] },
    { id: "mixed", family: "alpha", tiers: ["1K"], channels: [channel("a", "openai"), channel("g", "google"), channel("s", "sandbox")] },
  ],
});
const request = (fields: Record<string, unknown>) => create(CreateImageRequestSchema, { requestId: "r", accountId: "a", keyId: "k", prompt: "x", ...fields });

describe("validateImageRequest: OpenAI fields", () => {
  it("passes background and moderation on for a model whose every channel takes them", () => {
    const check = validateImageRequest(request({ model: "openai-only", background: "transparent", moderation: "low" }), catalog, 4);
    expect(check.ok && [check.spec.background, check.spec.moderation]).toEqual(["transparent", "low"]);
  });

  it("refuses them for a model with any channel that does not, naming the model and those providers", () => {
    for (const field of ["background", "moderation"] as const) {
      const check = validateImageRequest(request({ model: "mixed", [field]: "auto" }), catalog, 4);
      expect(check).toMatchObject({ ok: false, refusal: { code: ErrorCode.INVALID_FIELD } });
      expect(!check.ok && check.refusal.message).toMatch(new RegExp(`^The model mixed does not take ${field}: its channels use google, sandbox`));
    }
  });

  it("defaults output to png and reads jpeg and webp with their compression", () => {
    expect(validateImageRequest(request({ model: "mixed" }), catalog, 4)).toMatchObject({ ok: true, spec: { output: { format: "png", compression: undefined } } });
    expect(validateImageRequest(request({ model: "mixed", outputFormat: "webp", outputCompression: 40 }), catalog, 4)).toMatchObject({ ok: true, spec: { output: { format: "webp", compression: 40 } } });
  });

  it("holds a caller over RPC to the same rules as the edge (the contract of libs/core/src/image-request)", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ outputFormat: "gif" }, "output_format must be one of png, jpeg, webp"],
      [{ outputFormat: "png", outputCompression: 50 }, "output_compression applies to output_format jpeg or webp only, not png"],
      [{ outputCompression: 50 }, "output_compression applies to output_format jpeg or webp only, not png"],
      [{ outputFormat: "jpeg", outputCompression: 101 }, "output_compression must be an integer from 0 to 100"],
      [{ outputFormat: "jpeg", background: "transparent" }, "background transparent needs output_format png or webp; jpeg has no transparency"],
      [{ background: "green" }, "background must be one of transparent, opaque, auto"],
      [{ moderation: "off" }, "moderation must be one of low, auto"],
      [{ user: "u".repeat(257) }, "user must be a string of 1 to 256 characters without control characters"],
      [{ user: "line\nbreak" }, "user must be a string of 1 to 256 characters without control characters"],
      [{ quality: "ultra" }, "quality must be one of low, medium, high, xhigh, max, auto"],
      [{ n: 5 }, "n must be an integer from 1 to 4; got 5"],
      [{ prompt: "x".repeat(32_001) }, "prompt is longer than 32000 characters"],
    ];
    for (const [fields, message] of cases) {
      expect(validateImageRequest(request({ model: "openai-only", ...fields }), catalog, 4), JSON.stringify(fields).slice(0, 80)).toMatchObject({ ok: false, refusal: { code: ErrorCode.INVALID_FIELD, message } });
    }
    expect(validateImageRequest(request({ model: "openai-only", prompt: " \n" }), catalog, 4)).toMatchObject({ ok: false, refusal: { code: ErrorCode.MISSING_FIELD, message: "prompt must not be empty" } });
  });

  it("reads quality in any case and passes it on in lower case, and an absent n as 1", () => {
    expect(validateImageRequest(request({ model: "openai-only", quality: "HIGH" }), catalog, 4)).toMatchObject({ ok: true, spec: { quality: "high", n: 1 } });
  });
});
