import { describe, expect, it } from "vitest";
import { parseMessage, parsePreview, socketUrl } from "./socket.ts";

// ComfyUI's websocket frames as the adapter reads them (the frames themselves come
// over a real socket in adapter.test.ts; these are the shapes the simulator does not send).

/** A frame as ws hands it over: its bytes. */
const frame = (...parts: (number[] | string)[]) => new Uint8Array(Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : Buffer.from(part)))));
const u32 = (value: number) => [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];

describe("ComfyUI websocket frames", () => {
  it("reads a preview (type 1) as JPEG or PNG by its image type", () => {
    expect(parsePreview(frame(u32(1), u32(1), [0xff, 0xd8, 0xff]))).toEqual({ bytes: new Uint8Array([0xff, 0xd8, 0xff]), mediaType: "image/jpeg" });
    expect(parsePreview(frame(u32(1), u32(2), [0x89, 0x50]))?.mediaType).toBe("image/png");
    expect(parsePreview(frame(u32(1), u32(9), [1]))).toBeFalsy();
  });

  it("reads a preview with metadata (type 4), with its prompt id and media type", () => {
    const metadata = JSON.stringify({ node_id: "3", prompt_id: "p-1", image_type: "image/png" });
    const parsed = parsePreview(frame(u32(4), u32(Buffer.byteLength(metadata)), metadata, [0x89, 0x50, 0x4e]));
    expect(parsed).toEqual({ bytes: new Uint8Array([0x89, 0x50, 0x4e]), mediaType: "image/png", promptId: "p-1" });
  });

  it("ignores progress text (type 3), unencoded previews, truncated frames and malformed JSON", () => {
    expect(parsePreview(frame(u32(3), u32(1), "3", "step 2"))).toBeUndefined();
    expect(parsePreview(frame(u32(4), u32(500), "{}"))).toBeUndefined();
    expect(parsePreview(new Uint8Array([0, 0, 0, 1]))).toBeUndefined();
    expect(parseMessage('{"type":"progress","data":{"value":1,"max":4}}')).toEqual({ type: "progress", data: { value: 1, max: 4 } });
    expect(parseMessage("not json")).toBeUndefined();
    expect(parseMessage('{"type":"status"}')).toBeUndefined();
  });

  it("opens the socket under the base URL, ws or wss as the base is http or https", () => {
    expect(socketUrl("http://10.0.0.5:8188", "c-1").toString()).toBe("ws://10.0.0.5:8188/ws?clientId=c-1");
    expect(socketUrl("https://gpu.example.com/comfy/", "c-2").toString()).toBe("wss://gpu.example.com/comfy/ws?clientId=c-2");
  });
});
