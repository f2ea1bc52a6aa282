// Reading an image stream: the server-sent events of POST /console/api/playground with
// `stream: true`, in OpenAI's shapes (image_generation.partial_image, image_generation.completed,
// error). The framing is eventsource-parser's (vendored, as preact is); this file only reads
// fetch's body into it and each event's JSON out of it.
import { createParser } from "../vendor/eventsource-parser.mjs";

/**
 * @typedef {{ type: string, b64_json?: string, partial_image_index?: number, output_format?: string, size?: string,
 *   error?: { message: string, type: string, code: string } }} ImageEvent
 */

/** Whether an answer is an event stream (a server that does not stream answers JSON). */
export const isEventStream = (/** @type {Response} */ response) => (response.headers.get("content-type") ?? "").startsWith("text/event-stream");

/**
 * Calls onEvent with each event's JSON object, in order, until the stream ends. The type is the
 * JSON's own `type`, else the event's name. Data that is not a JSON object becomes an `error` event.
 * @param {ReadableStream<Uint8Array>} body
 * @param {(event: ImageEvent) => void} onEvent
 */
export async function readImageEvents(body, onEvent) {
  const parser = createParser({
    onEvent(message) {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        event = null;
      }
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        onEvent({ type: "error", error: { message: "The server sent an event that is not JSON", type: "gateway_error", code: "invalid_event" } });
        return;
      }
      onEvent({ ...event, type: typeof event.type === "string" ? event.type : message.event ?? "message" });
    },
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  parser.feed(decoder.decode());
}

/** An event's image as something an <img> shows. */
export const imageSource = (/** @type {ImageEvent} */ event) => `data:image/${event.output_format === "jpeg" ? "jpeg" : event.output_format ?? "png"};base64,${event.b64_json}`;
