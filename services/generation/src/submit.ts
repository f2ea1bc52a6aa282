import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateImageRequest, SubmitImageResponseSchema } from "@orvado/proto";
import type { Logger } from "@orvado/core";
import type { JobRunner } from "./jobs.ts";

// SubmitImage, the RPC behind an async submit (`Prefer: respond-async`, docs/api.md#async-submit):
// the job starts exactly as CreateImage's would, with every refusal before it (validation, limits,
// capacity, balance) answered the same way, but the call is answered as soon as the job runs. The
// job is not the call's: it goes on in this process to its end whatever happens to the caller
// (JobRunner keeps it in flight, and a graceful stop waits for it), and GetJob tells its outcome.

export type SubmitReply = MessageInitShape<typeof SubmitImageResponseSchema>;

const nowUnix = () => BigInt(Math.floor(Date.now() / 1000));

/**
 * Answers `running` once the job's row is written (JobObserver.started) or, for an Idempotency-Key
 * retry, once its original's is (JobObserver.attached: the original's id, replayed). When the job
 * ends before that, its answer is the reply: a refusal, or a finished original's replay.
 */
export function submitImage(jobs: Pick<JobRunner, "createImage">, req: CreateImageRequest, logger: Logger): Promise<SubmitReply> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const answer = (reply: SubmitReply) => {
      if (answered) return;
      answered = true;
      resolve(reply);
    };
    const running = (requestId: string, createdUnix: bigint, replayed: boolean) => answer({ result: { case: "running", value: { createdUnix } }, requestId, replayed });
    jobs
      .createImage(req, {
        started: () => running(req.requestId, nowUnix(), false),
        attached: (originalRequestId, createdUnix) => running(originalRequestId, createdUnix, true),
      })
      .then(
        (reply) => answer({ result: reply.result, requestId: reply.requestId || req.requestId, replayed: reply.replayed ?? false }),
        (error: unknown) => {
          if (!answered) {
            answered = true;
            reject(error);
            return;
          }
          // The caller has its 202 already: the lookup tells whatever outcome was recorded.
          logger.warn({ err: error, requestId: req.requestId }, "a submitted job ended in an error after it was accepted");
        },
      );
  });
}
