import type { FastifyReply, FastifyRequest } from "fastify";
import type { VerifiedKey } from "@orvado/proto";
import { jobOutcomeOrUnknown } from "../job-outcome.ts";
import { RESPOND_ASYNC } from "../prefer.ts";
import { answerAs, answerEndedJob, jobLookupPath, jobRequest, type ImageJobDeps, type JobFields } from "./image-job.ts";
import { running } from "./jobs.ts";

/**
 * An async submit (`Prefer: respond-async`, docs/api.md#async-submit) of a generation or an edit:
 * generation's SubmitImage starts the job exactly as a synchronous request would, so whatever refuses
 * a request before its job runs answers here as it would there; once the job runs the answer is 202,
 * pointing at the lookup, and the job goes on in generation to its end. An idempotent retry of a
 * running request points at the original; one of a finished request is its replay, as ever.
 */
export async function submitImageJob(request: FastifyRequest, reply: FastifyReply, deps: ImageJobDeps, key: VerifiedKey, idempotencyKey: string, fields: JobFields) {
  // A call lost midway may have started the job: job_outcome_unknown names the lookup (job-outcome.ts).
  const answer = await jobOutcomeOrUnknown(request, reply, `GET ${jobLookupPath(request.id)}`, () => deps.generation.submitImage(jobRequest(request, key, idempotencyKey, fields)));
  if (!answer) return reply;
  const { result } = answer;
  if (result.case !== "running") return answerEndedJob(request, reply, deps.publicUrl, { result, replayed: answer.replayed, requestId: answer.requestId });
  const requestId = answer.requestId || request.id;
  if (answer.replayed) answerAs(reply, requestId);
  reply.header("location", jobLookupPath(requestId)).header("preference-applied", RESPOND_ASYNC);
  return running(reply, requestId, Number(result.value.createdUnix));
}
