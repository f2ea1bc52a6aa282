import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";
import { z } from "zod";
import { errorBody } from "@orvado/core";
import type { ErrorCode } from "@orvado/proto";

// The playground's stream (docs/console.md, POST /console/api/playground with `stream: true`):
// server-sent events in OpenAI's image-stream shapes, so the console reads the same events an
// SDK reads from POST /v1/images/generations. The head carries the request id headers at once
// (the page polls the job's progress with it); a comment line every 15 s keeps proxies that cut
// idle connections from cutting a long job.

/** OpenAI's bound on partial images a stream may carry. */
export const MAX_PARTIAL_IMAGES = 3;
const KEEP_ALIVE_MS = 15_000;

const options = z.object({
  stream: z.boolean({ error: "stream must be true or false" }).nullish(),
  partial_images: z
    .int({ error: `partial_images must be an integer from 0 to ${MAX_PARTIAL_IMAGES}` })
    .min(0, { error: `partial_images must be an integer from 0 to ${MAX_PARTIAL_IMAGES}` })
    .max(MAX_PARTIAL_IMAGES, { error: `partial_images must be an integer from 0 to ${MAX_PARTIAL_IMAGES}` })
    .nullish(),
});

export type StreamOptions = { ok: true; stream: boolean; partialImages: number; request: unknown } | { ok: false; message: string };

/**
 * Takes `stream` and `partial_images` off the playground's body; the rest is the image request,
 * for the request contract to judge. A body that is not an object is left for the contract to refuse.
 */
export function streamOptions(body: unknown): StreamOptions {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { ok: true, stream: false, partialImages: 0, request: body };
  const { stream, partial_images, ...request } = body as Record<string, unknown>;
  const parsed = options.safeParse({ stream, partial_images });
  if (!parsed.success) return { ok: false, message: parsed.error.issues[0]!.message };
  return { ok: true, stream: parsed.data.stream === true, partialImages: parsed.data.partial_images ?? 0, request };
}

/** One event in OpenAI's framing: the event line names its type, the JSON object is one data line. */
export function sseEvent(event: { type: string }): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface EventStream {
  send(event: { type: string }): void;
  /** An `error` event in the API's error shape, the request id in its message. */
  fail(code: ErrorCode, message: string, requestId: string): void;
  end(): void;
}

/** Answers 200 text/event-stream now (headers included) and gives the writer of its events. */
export function openEventStream(reply: FastifyReply): EventStream {
  const body = new PassThrough();
  // x-accel-buffering: a buffering proxy (nginx) would hold the events back until the end.
  reply.code(200).type("text/event-stream; charset=utf-8").header("x-accel-buffering", "no").send(body);
  const keepAlive = setInterval(() => body.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
  const send = (event: { type: string }) => {
    if (!body.writableEnded) body.write(sseEvent(event));
  };
  return {
    send,
    fail: (code, message, requestId) => send({ type: "error", ...errorBody(code, message, requestId) }),
    end() {
      clearInterval(keepAlive);
      body.end();
    },
  };
}
