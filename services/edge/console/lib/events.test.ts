import { describe, expect, it, vi } from "vitest";

// The console's event-stream reader (lib/events.js) in Node, on a fake stream built here: the
// browser gets eventsource-parser from /console/vendor/, Node from the package itself.
vi.mock("../vendor/eventsource-parser.mjs", () => import("eventsource-parser"));

interface ImageEvent {
  type: string;
  b64_json?: string;
  partial_image_index?: number;
  output_format?: string;
  error?: { message: string; type: string; code: string };
}
interface EventsModule {
  readImageEvents(body: ReadableStream<Uint8Array>, onEvent: (event: ImageEvent) => void): Promise<void>;
  isEventStream(response: Response): boolean;
  imageSource(event: ImageEvent): string;
}
// Through a URL: the module is the browser's JavaScript, outside this project's TypeScript.
const events = (await import(new URL("./events.js", import.meta.url).href)) as EventsModule;

/** A body that delivers the text in the given pieces. */
function body(...pieces: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return chunks(pieces.map((piece) => encoder.encode(piece)));
}

/** The text's UTF-8 bytes cut every `size` bytes, as a network may cut them: through lines and characters. */
function cutBytes(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
  return chunks(pieces);
}

function chunks(pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
}

async function read(stream: ReadableStream<Uint8Array>): Promise<ImageEvent[]> {
  const seen: ImageEvent[] = [];
  await events.readImageEvents(stream, (event) => seen.push(event));
  return seen;
}

const partial = (index: number) =>
  `event: image_generation.partial_image\ndata: ${JSON.stringify({ type: "image_generation.partial_image", b64_json: `cGFydGlhbA${index}`, partial_image_index: index, output_format: "webp" })}\n\n`;
const completed = `event: image_generation.completed\ndata: ${JSON.stringify({ type: "image_generation.completed", b64_json: "ZmluYWw=", usage: { total_tokens: 0 } })}\n\n`;

describe("reading the playground's image events (a fake stream, no transport)", () => {
  it("gives partial images, then the completed image, in order, whatever the chunking", async () => {
    const failed = `event: error\ndata: ${JSON.stringify({ type: "error", error: { message: "Modèle indisponible — réessayez", type: "gateway_error", code: "x" } })}\n\n`;
    const text = `: keep-alive\n\n${partial(0)}${partial(1)}${completed}${failed}`;
    const whole = await read(body(text));
    expect(whole.map((event) => [event.type, event.partial_image_index])).toEqual([
      ["image_generation.partial_image", 0],
      ["image_generation.partial_image", 1],
      ["image_generation.completed", undefined],
      ["error", undefined],
    ]);
    expect(whole[3]!.error!.message).toBe("Modèle indisponible — réessayez");
    // Every 7 bytes and every byte: through lines, and through the two- and three-byte characters.
    expect(await read(cutBytes(text, 7))).toEqual(whole);
    expect(await read(cutBytes(text, 1))).toEqual(whole);
    expect(events.imageSource(whole[1]!)).toBe("data:image/webp;base64,cGFydGlhbA1");
  });

  it("passes an error event on, and turns data that is not a JSON object into one", async () => {
    const error = { type: "error", error: { message: "Insufficient balance (request id: req_1)", type: "gateway_error", code: "insufficient_balance" } };
    const seen = await read(body(`event: error\ndata: ${JSON.stringify(error)}\n\n`, "data: not json\n\n", 'event: image_generation.completed\ndata: {"b64_json":"eA=="}\n\n'));
    expect(seen[0]).toEqual(error);
    expect(seen[1]).toMatchObject({ type: "error", error: { code: "invalid_event" } });
    // Without a type of its own, the event's name is its type.
    expect(seen[2]).toEqual({ type: "image_generation.completed", b64_json: "eA==" });
  });

  it("tells an event stream from a JSON answer by its content type", () => {
    expect(events.isEventStream(new Response("", { headers: { "content-type": "text/event-stream; charset=utf-8" } }))).toBe(true);
    expect(events.isEventStream(new Response("{}", { headers: { "content-type": "application/json" } }))).toBe(false);
  });
});
