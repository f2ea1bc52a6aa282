import type { Db } from "@orvado/db";
import type { ChannelHealth } from "./capacity.ts";
import type { ChannelFailure } from "./channel-slots.ts";
import { channelKey } from "./catalog.ts";

const lastFailureOf = (failure: ChannelFailure | undefined) => ({
  lastFailureDetail: failure?.detail ?? "",
  lastFailureAtUnixMs: failure ? BigInt(failure.at.getTime()) : undefined,
});

// Each channel's jobs over a recent window, summed by PostgreSQL from
// generation.jobs (so every replica's jobs count), beside the live state of
// its circuit breaker and slots in this process.

export interface ChannelWindowStats {
  succeeded: number;
  failed: number;
  running: number;
  latencyAvgMs?: number;
  latencyP50Ms?: number;
  latencyP95Ms?: number;
}

interface StatsRow {
  model: string;
  channel: string;
  succeeded: string;
  failed: string;
  running: string;
  avg_ms: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
}

const key = (model: string, channel: string) => `${model}\n${channel}`;
const whole = (value: number | null) => (value === null ? undefined : Math.round(Number(value)));

/** Jobs started within the last `hours`, per model and channel; latency over the jobs that ended. */
export async function channelWindowStats(db: Db, hours: number): Promise<Map<string, ChannelWindowStats>> {
  const { rows } = await db.query<StatsRow>(
    `SELECT model, channel,
            count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
            count(*) FILTER (WHERE status = 'failed') AS failed,
            count(*) FILTER (WHERE status = 'running') AS running,
            avg(elapsed_ms) AS avg_ms,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY elapsed_ms) AS p50_ms,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY elapsed_ms) AS p95_ms
       FROM (SELECT model, channel, status,
                    EXTRACT(EPOCH FROM (finished_at - created_at)) * 1000 AS elapsed_ms
               FROM generation.jobs
              WHERE created_at >= now() - $1 * interval '1 hour') AS recent
      GROUP BY model, channel`,
    [hours],
  );
  return new Map(
    rows.map((row) => [
      key(row.model, row.channel),
      {
        succeeded: Number(row.succeeded),
        failed: Number(row.failed),
        running: Number(row.running),
        latencyAvgMs: whole(row.avg_ms),
        latencyP50Ms: whole(row.p50_ms),
        latencyP95Ms: whole(row.p95_ms),
      },
    ]),
  );
}

/**
 * One row per catalog channel, in catalog order; a channel without jobs in the window has zeros.
 * `failures` are the channels' last upstream failures by `<model>/<channel>`, whenever they were.
 */
export function channelStatsRows(models: Array<{ id: string; channels: ChannelHealth[] }>, stats: Map<string, ChannelWindowStats>, failures: Map<string, ChannelFailure> = new Map()) {
  return models.flatMap((model) =>
    model.channels.map((channel) => ({
      ...lastFailureOf(failures.get(channelKey(model.id, channel.name))),
      model: model.id,
      channel: channel.name,
      provider: channel.provider,
      state: channel.state,
      healthy: channel.healthy,
      inUse: channel.inUse,
      capacity: channel.capacity,
      priority: channel.priority,
      ...(stats.get(key(model.id, channel.name)) ?? { succeeded: 0, failed: 0, running: 0 }),
    })),
  );
}
