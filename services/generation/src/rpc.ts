import type { ConnectRouter } from "@connectrpc/connect";
import { GenerationService } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import type { Db } from "@orvado/db";
import type { Catalog } from "./catalog.ts";
import { isSandboxOnly } from "./catalog.ts";
import type { JobRunner } from "./jobs.ts";
import type { ImageStore } from "./storage/store.ts";
import { checkImageLink } from "./storage/signed-links.ts";
import { findImage } from "./job-store.ts";
import { lookupJob, lookupJobDetail } from "./job-lookup.ts";
import { channelStatsRows, channelWindowStats } from "./channel-stats.ts";
import type { GenerationMetrics } from "./metrics.ts";

const CHUNK_BYTES = 256 * 1024;
const STARTED_UNIX = BigInt(Math.floor(Date.now() / 1000));

export function generationRoutes(deps: { db: Db; catalog: Catalog; jobs: JobRunner; store: ImageStore; metrics: GenerationMetrics; urlSigningSecret: string }) {
  return (router: ConnectRouter) =>
    router.service(GenerationService, {
      createImage: (req) => deps.jobs.createImage(req),
      listModels() {
        return {
          models: [...deps.catalog.values()].map((model) => ({
            id: model.id,
            family: model.family,
            tiers: model.tiers,
            sandbox: isSandboxOnly(model),
            createdUnix: STARTED_UNIX,
            // healthy is false while the channel's circuit breaker is open (circuit-breaker.ts).
            channels: deps.jobs.channels.health(model),
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
        if (state.case === "running") return { state: { case: "running", value: { createdUnix: state.createdUnix } }, detail };
        if (state.case === "images") return { state: { case: "images", value: state.value }, detail };
        return { state: { case: "failure", value: state.value }, detail };
      },
      async getChannelStats(req) {
        if (req.hours > 720) throw new ConnectError("hours must be 1..720", Code.InvalidArgument);
        const hours = req.hours || 24;
        const models = [...deps.catalog.values()].map((model) => ({ id: model.id, channels: deps.jobs.channels.health(model) }));
        return { hours, channels: channelStatsRows(models, await channelWindowStats(deps.db, hours)) };
      },
      getMetrics: () => deps.metrics.exposition(),
      async *readImage(req) {
        const check = checkImageLink(req.imageId, Number(req.expiresUnix), req.signature, deps.urlSigningSecret);
        if (!check.ok && check.reason === "expired") throw new ConnectError("this image link has expired", Code.FailedPrecondition);
        if (!check.ok) throw new ConnectError("no such image", Code.NotFound);
        const row = await findImage(deps.db, req.imageId);
        const file = row ? await deps.store.open(req.imageId) : null;
        if (!row || !file) throw new ConnectError("no such image", Code.NotFound);
        yield { contentType: file.contentType };
        for await (const chunk of file.stream as AsyncIterable<Buffer>) {
          for (let offset = 0; offset < chunk.length; offset += CHUNK_BYTES) {
            yield { chunk: chunk.subarray(offset, offset + CHUNK_BYTES) };
          }
        }
      },
    });
}
