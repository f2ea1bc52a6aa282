import { Readable } from "node:stream";
import type { ConnectRouter } from "@connectrpc/connect";
import { GenerationService } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import type { Db } from "@orvado/db";
import type { Catalog } from "./catalog.ts";
import { channelKey, isSandboxOnly } from "./catalog.ts";
import type { JobRunner } from "./jobs.ts";
import { READ_CHUNK_BYTES, type ImageStore } from "./storage/store.ts";
import { checkImageLink } from "./storage/signed-links.ts";
import { findImage } from "./job-store.ts";
import { lookupJob, lookupJobDetail } from "./job-lookup.ts";
import { channelStatsRows, channelWindowStats } from "./channel-stats.ts";
import { lastChannelFailures, resetBreaker } from "./channel-slots.ts";
import type { GenerationMetrics } from "./metrics.ts";
import { followJob } from "./job-stream.ts";
import { submitImage } from "./submit.ts";
import type { Logger } from "@orvado/core";

const CHUNK_BYTES = READ_CHUNK_BYTES;
const STARTED_UNIX = BigInt(Math.floor(Date.now() / 1000));

export function generationRoutes(deps: { db: Db; catalog: Catalog; jobs: JobRunner; store: ImageStore; metrics: GenerationMetrics; urlSigningSecret: string; logger: Logger }) {
  return (router: ConnectRouter) =>
    router.service(GenerationService, {
      createImage: (req) => deps.jobs.createImage(req),
      // A caller that leaves stops following the job; the job runs on and is charged (job-stream.ts).
      streamImage: (req, context) => followJob(deps.jobs, req, context.signal),
      // Answers once the job runs; the job itself goes on here to its end (submit.ts).
      submitImage: (req) => submitImage(deps.jobs, req, deps.logger),
      async listModels() {
        // One query: every replica answers with the same breaker states and slot counts (capacity.ts).
        const health = await deps.jobs.channels.health();
        return {
          models: [...deps.catalog.values()].map((model) => ({
            id: model.id,
            aliases: model.aliases,
            family: model.family,
            tiers: model.tiers,
            edits: model.edits,
            sandbox: isSandboxOnly(model),
            createdUnix: STARTED_UNIX,
            // healthy is false while the channel's circuit breaker is open.
            channels: model.channels.map((channel) => health.get(channelKey(model.id, channel.name))!),
          })),
        };
      },
      async getJob(req) {
        // Another account's job is "not found", never "forbidden": ids must not leak.
        const [state, detail] = await Promise.all([
          lookupJob(deps, req.requestId, req.accountId, "url"),
          lookupJobDetail(deps.db, req.requestId, req.accountId),
        ]);
        if (!state || !detail) throw new ConnectError("no such request", Code.NotFound);
        if (state.case === "running") {
          const { createdUnix, progress, previewUrlPath } = state;
          return { state: { case: "running", value: { createdUnix, progress, previewUrlPath } }, detail };
        }
        if (state.case === "images") return { state: { case: "images", value: state.value }, detail };
        return { state: { case: "failure", value: state.value }, detail };
      },
      async getChannelStats(req) {
        if (req.hours > 720) throw new ConnectError("hours must be 1..720", Code.InvalidArgument);
        const hours = req.hours || 24;
        // The same shared breaker states, slot counts and last failures every replica answers with (capacity.ts).
        const keys = [...deps.catalog.values()].flatMap((model) => model.channels.map((channel) => channelKey(model.id, channel.name)));
        const [health, stats, failures] = await Promise.all([deps.jobs.channels.health(), channelWindowStats(deps.db, hours), lastChannelFailures(deps.db, keys)]);
        const models = [...deps.catalog.values()].map((model) => ({
          id: model.id,
          channels: model.channels.map((channel) => health.get(channelKey(model.id, channel.name))!),
        }));
        return { hours, channels: channelStatsRows(models, stats, failures) };
      },
      async resetChannel(req) {
        // The catalog's own names only: a reset never writes a row for a channel that does not exist.
        const model = deps.catalog.get(req.model);
        const channel = model?.channels.find((entry) => entry.name === req.channel);
        if (!model || !channel) throw new ConnectError(`no channel ${JSON.stringify(req.channel.slice(0, 64))} of model ${JSON.stringify(req.model.slice(0, 200))}`, Code.NotFound);
        const key = channelKey(model.id, channel.name);
        await resetBreaker(deps.db, key);
        return { channel: (await deps.jobs.channels.health()).get(key)! };
      },
      getMetrics: () => deps.metrics.exposition(),
      async *readImage(req, context) {
        const check = checkImageLink(req.imageId, Number(req.expiresUnix), req.signature, deps.urlSigningSecret);
        if (!check.ok && check.reason === "expired") throw new ConnectError("this image link has expired", Code.FailedPrecondition);
        if (!check.ok) throw new ConnectError("no such image", Code.NotFound);
        const row = await findImage(deps.db, req.imageId);
        const file = row ? await deps.store.open(req.imageId) : null;
        if (!row || !file) throw new ConnectError("no such image", Code.NotFound);
        // A caller that stops reading or cancels closes the file: Connect's HTTP/2 server only aborts
        // the signal of a cancelled call, and leaves its handler suspended where it yielded.
        const close = () => closeStream(file.stream);
        context.signal.addEventListener("abort", close, { once: true });
        try {
          yield { contentType: file.contentType };
          for await (const chunk of file.stream as AsyncIterable<Buffer>) {
            for (let offset = 0; offset < chunk.length; offset += CHUNK_BYTES) {
              yield { chunk: chunk.subarray(offset, offset + CHUNK_BYTES) };
            }
          }
        } finally {
          context.signal.removeEventListener("abort", close);
          close();
        }
      },
    });
}

/** Closes a stored image's stream, read or not (a file store's stream holds the file open until then). */
function closeStream(stream: NodeJS.ReadableStream): void {
  if (stream instanceof Readable) stream.destroy();
}
