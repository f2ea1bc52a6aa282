import { describe, expect, it } from "vitest";
import { ReadResponse } from "./read-response.ts";

// In memory: the Response the guarded fetch hands the AI SDK, read as the provider packages read it.

const answer = (text: string | null, status = 200) =>
  new ReadResponse(text === null ? null : new TextEncoder().encode(text), { status, statusText: "OK", headers: { "content-type": "application/json" } });

describe("ReadResponse", () => {
  it("is a Response with the answer's status and headers", () => {
    const response = answer('{"a":1}', 201);
    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.statusText).toBe("OK");
    expect(response.headers.get("content-type")).toBe("application/json");
  });

  it("reads its bytes as text, JSON, bytes, an ArrayBuffer or a Blob, once", async () => {
    const text = answer('{"b64_json":"aGk=","é":"ü"}');
    expect(text.bodyUsed).toBe(false);
    expect(await text.text()).toBe('{"b64_json":"aGk=","é":"ü"}');
    expect(text.bodyUsed).toBe(true);
    await expect(text.text()).rejects.toBeInstanceOf(TypeError);
    await expect(text.json()).rejects.toBeInstanceOf(TypeError);
    expect(await answer('{"a":[1,2]}').json()).toEqual({ a: [1, 2] });
    expect([...(await answer("hi").bytes())]).toEqual([104, 105]);
    expect(new Uint8Array(await answer("hi").arrayBuffer())).toEqual(new Uint8Array([104, 105]));
    const blob = await answer("hi").blob();
    expect(blob.type).toBe("application/json");
    expect(await blob.text()).toBe("hi");
    await expect(answer("not json").json()).rejects.toBeInstanceOf(SyntaxError);
  });

  it("gives its bytes as a stream when body is read (binary downloads), counting as read once a reader takes it", async () => {
    const response = answer("image bytes");
    const stream = response.body;
    expect(stream).not.toBeNull();
    expect(response.body).toBe(stream);
    expect(response.bodyUsed).toBe(false);
    const reader = stream!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe("image bytes");
    expect((await reader.read()).done).toBe(true);
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toBeInstanceOf(TypeError);
    // Asked for, not read: the bytes can still be read another way, as the AI SDK's binary handler does.
    const checked = answer("png");
    expect(checked.body).not.toBeNull();
    expect(new TextDecoder().decode(await checked.arrayBuffer())).toBe("png");
  });

  it("hands the answer's own bytes to a reader of its body, in one chunk, not a copy of them", async () => {
    const bytes = new TextEncoder().encode('{"data":[]}');
    const { value } = await new ReadResponse(bytes, { status: 200 }).body!.getReader().read();
    expect(value).toBe(bytes);
  });

  it("has no body when the answer had none (204), and reads as empty", async () => {
    expect(answer(null, 204).body).toBeNull();
    expect(await answer(null, 204).text()).toBe("");
  });

  it("clones into a Response that reads the same bytes, until it is read", async () => {
    const response = answer("twice");
    const copy = response.clone();
    expect(await copy.text()).toBe("twice");
    expect(await response.text()).toBe("twice");
    expect(() => response.clone()).toThrow(TypeError);
  });
});
