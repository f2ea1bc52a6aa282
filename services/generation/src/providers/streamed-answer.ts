import { UpstreamFailure } from "./errors.ts";

// An upstream answer handed on as it arrives rather than read whole: only a successful
// `text/event-stream` answer (OpenAI's streamed images, providers/openai-stream.ts), whose
// events are worth something before the end. The gateway's byte limit still holds: the
// stream fails once the bytes read pass it (as AnswerTooLarge says of a whole answer), and
// the connection is let go.

/** A successful event-stream answer is streamed; every other answer is read whole. */
export function isStreamedAnswer(status: number, contentType: string | null | undefined): boolean {
  return status >= 200 && status < 300 && /^\s*text\/event-stream\b/i.test(contentType ?? "");
}

export interface StreamLimits {
  maxBytes: number;
  /** The answer gate (answer-gate.ts): an event stream's length is unknown, so its bytes are admitted once read, before it ends. */
  admit?: (bytes: number, signal: AbortSignal | null | undefined) => Promise<void>;
  signal?: AbortSignal | null;
}

/**
 * The chunks of `source` (a node:http message or a fetch body) as a web stream, counted against
 * the byte limit. Cancelling the stream (its reader gave up) ends the source and its connection.
 */
export function limitedStream(source: AsyncIterable<Uint8Array>, limits: StreamLimits): ReadableStream<Uint8Array> {
  const chunks = source[Symbol.asyncIterator]();
  let total = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) {
          await limits.admit?.(total, limits.signal);
          return controller.close();
        }
        total += next.value.byteLength;
        if (total > limits.maxBytes) {
          await chunks.return?.();
          return controller.error(new UpstreamFailure(`the upstream answer exceeded the ${limits.maxBytes}-byte limit`));
        }
        controller.enqueue(next.value);
      } catch (error) {
        controller.error(limits.signal?.aborted ? limits.signal.reason : error);
      }
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}
