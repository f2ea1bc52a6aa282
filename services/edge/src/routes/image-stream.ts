import type { FastifyReply, FastifyRequest } from "fastify";
import { ErrorCode, ResponseFormat, type CreateImageResponse, type GeneratedImage, type ImageJobEvent, type JobProgress } from "@orvado/proto";
import { errorBody } from "@orvado/core";
import { EventStream } from "../event-stream.ts";
import { jobOutcomeOrUnknown, lostCall } from "../job-outcome.ts";
import { sendError } from "../reply.ts";
import type { VerifiedKey } from "@orvado/proto";
import { answerAs, answerEndedJob, jobLookupPath, jobRequest, type ImageJobDeps, type JobFields } from "./image-job.ts";

// `stream: true` (docs/api.md#streaming): the job through GenerationService.StreamImage,
// answered as server-sent events in OpenAI's shapes. Until the job starts, the answer is
// an ordinary one: a refusal (validation, capacity, balance) keeps its status and JSON
// error. Once it runs, the head goes out (with the request id headers), then partial
// images, one completed event per image, or an `error` event, and the end. A client that
// leaves stops the following, not the job: it runs on and is charged when it completes.

export interface ImageStreamDeps extends ImageJobDeps {
  heartbeatMs: number;
}

/** OpenAI's event names: image_generation.* for generations, image_edit.* for edits. */
export type StreamKind = "image_generation" | "image_edit";

/** Orvado bills per image (the cost record), not per token: the usage OpenAI's events carry is zero. */
const NO_TOKENS = { input_tokens: 0, input_tokens_details: { image_tokens: 0, text_tokens: 0 }, output_tokens: 0, total_tokens: 0 };

type Events = AsyncIterator<ImageJobEvent>;

/** The first event's place when the client left before it came: there is no one to answer. */
const CLIENT_LEFT: IteratorResult<ImageJobEvent> = { done: true, value: undefined };

export async function streamImageJob(request: FastifyRequest, reply: FastifyReply, deps: ImageStreamDeps, key: VerifiedKey, idempotencyKey: string, fields: JobFields, kind: StreamKind) {
  const following = new AbortController();
  // A stream always answers with base64 images, as OpenAI's does: the completed event carries the image.
  const message = { ...jobRequest(request, key, idempotencyKey, fields), responseFormat: ResponseFormat.B64_JSON };
  // A client that leaves, even before the job starts, stops the following (and only that).
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) following.abort();
  });
  const events = deps.generation.streamImage(message, { signal: following.signal })[Symbol.asyncIterator]();
  const untilClientLeft = (error: unknown) => (following.signal.aborted ? CLIENT_LEFT : Promise.reject(error));
  const first = await jobOutcomeOrUnknown(request, reply, `GET ${jobLookupPath(request.id)}`, () => events.next().catch(untilClientLeft));
  if (!first || following.signal.aborted) return reply;
  const event = first.done ? undefined : first.value.event;
  if (!event) return sendError(request, reply, ErrorCode.INTERNAL_ERROR, "The generation service gave no answer");
  // done is the last message: the call is read to its end (see relay) before a refusal is answered.
  if (event.case === "done") await events.next().catch(() => undefined);
  if (event.case === "done" && event.value.result.case !== "images") return answerEndedJob(request, reply, deps.publicUrl, event.value);
  // An idempotent retry answers as its original: attached to its running job (started), or given its stored answer (done).
  const replayedFrom = replayedFromOf(event);
  if (replayedFrom) answerAs(reply, replayedFrom);
  const requestId = replayedFrom ?? request.id;
  const stream = new EventStream(reply, deps.heartbeatMs);
  stream.left.signal.addEventListener("abort", () => following.abort(), { once: true });
  const shape = eventShape(kind, fields);
  void relay(request, stream, events, event, shape, requestId);
  return reply;
}

function replayedFromOf(event: NonNullable<ImageJobEvent["event"]>): string | null {
  if (event.case === "started") return event.value.replayed ? event.value.requestId : null;
  if (event.case === "done") return event.value.replayed && event.value.requestId ? event.value.requestId : null;
  return null;
}

/** The fields every image event repeats: the request's settings, with OpenAI's defaults where it sent none. */
function eventShape(kind: StreamKind, fields: JobFields) {
  return {
    kind,
    size: fields.size ?? "1024x1024",
    quality: fields.quality ?? "auto",
    background: fields.background ?? "auto",
    output_format: fields.outputFormat || "png",
  };
}

type Shape = ReturnType<typeof eventShape>;

/** Each event from generation to the client, one at a time (EventStream.send waits for a slow client). */
async function relay(request: FastifyRequest, stream: EventStream, events: Events, first: NonNullable<ImageJobEvent["event"]>, shape: Shape, requestId: string) {
  let event: ImageJobEvent["event"] | undefined = first;
  try {
    while (event && !stream.closed) {
      if (event.case === "progress") await sendPartial(stream, event.value, shape);
      if (event.case === "done") {
        // done is generation's last message: read the call to its end, so the stream closes as
        // finished rather than cancelled after the server closed it (an RST_STREAM per job, which
        // Node's HTTP/2 server counts as invalid and, past maxSessionInvalidFrames, answers by
        // closing the session with every call on it). The first event's done was read already.
        if (event !== first) await events.next();
        return await sendDone(stream, event.value, shape, requestId);
      }
      const next = await events.next();
      event = next.done ? undefined : next.value.event;
    }
    if (!stream.closed) await sendFailure(stream, ErrorCode.INTERNAL_ERROR, "The generation service ended the stream without an answer", requestId);
  } catch (error) {
    if (stream.closed) return;
    // Judged as a plain answer's broken call is (job-outcome.ts), then told as an error event.
    const lost = lostCall(error, `GET ${jobLookupPath(requestId)}`);
    request.log[lost.level]({ err: error }, lost.log);
    await sendFailure(stream, lost.code, lost.message, requestId);
  } finally {
    stream.end();
    // The call is let go of whatever its state: done is its last message, but over HTTP/2 an
    // unread end keeps its stream (and generation's shutdown) open.
    await events.return?.().catch(() => {});
  }
}

async function sendPartial(stream: EventStream, progress: JobProgress, shape: Shape) {
  if (progress.partialImage === undefined) return;
  await stream.send(`${shape.kind}.partial_image`, {
    type: `${shape.kind}.partial_image`,
    b64_json: Buffer.from(progress.partialImage).toString("base64"),
    partial_image_index: progress.partialImageIndex ?? 0,
    created_at: Math.floor(Date.now() / 1000),
    ...imageSettings(shape),
  });
}

async function sendDone(stream: EventStream, done: CreateImageResponse, shape: Shape, requestId: string) {
  if (done.result.case !== "images") {
    const refusal = done.result.value;
    return sendFailure(stream, refusal?.code ?? ErrorCode.INTERNAL_ERROR, refusal?.message ?? "The generation service gave no answer", requestId);
  }
  const createdAt = Number(done.result.value.createdUnix);
  for (const image of done.result.value.data) {
    await stream.send(`${shape.kind}.completed`, { type: `${shape.kind}.completed`, b64_json: base64Of(image), created_at: createdAt, ...imageSettings(shape), usage: NO_TOKENS });
  }
}

/** An error after the stream began: OpenAI's error event, which its SDKs raise as an APIError. */
function sendFailure(stream: EventStream, code: ErrorCode, message: string, requestId: string) {
  return stream.send("error", { type: "error", ...errorBody(code, message, requestId) });
}

const imageSettings = (shape: Shape) => ({ size: shape.size, quality: shape.quality, background: shape.background, output_format: shape.output_format });

const base64Of = (image: GeneratedImage) => (image.content.case === "b64Json" ? image.content.value : "");
