import type { ChannelStats } from "@orvado/proto";
import { isoTime, type Json } from "./format.ts";
import { call, present, type CommandContext } from "./commands.ts";
import type { Command } from "./args.ts";

// `orvado channels`: each channel's circuit breaker, slots, recent jobs and last failure, as every
// generation replica shares them in PostgreSQL, and closing a breaker by hand.

type Out = { [key: string]: Json };

function channelJson(row: ChannelStats): Out {
  return {
    model: row.model,
    channel: row.channel,
    provider: row.provider,
    state: row.state,
    healthy: row.healthy,
    in_use: row.inUse,
    capacity: row.capacity,
    priority: row.priority,
    succeeded: row.succeeded,
    failed: row.failed,
    running: row.running,
    last_failure: row.lastFailureAtUnixMs === undefined ? null : { detail: row.lastFailureDetail, at: isoTime(row.lastFailureAtUnixMs) },
  };
}

export async function listChannels(ctx: CommandContext, cmd: Extract<Command, { name: "channels list" }>): Promise<Out> {
  const what = "listing the channels";
  const stats = await call("generation", what, () => ctx.clients.generation.getChannelStats({ hours: cmd.hours }, { timeoutMs: 15_000 }));
  return { hours: stats.hours, channels: stats.channels.map(channelJson) };
}

export async function resetChannel(ctx: CommandContext, cmd: Extract<Command, { name: "channels reset" }>): Promise<Out> {
  const what = `resetting the breaker of channel ${cmd.channel} of model ${cmd.model}`;
  const response = await call("generation", what, () => ctx.clients.generation.resetChannel({ model: cmd.model, channel: cmd.channel }, { timeoutMs: 15_000 }));
  const channel = present(response.channel, "generation", what);
  return {
    model: cmd.model,
    channel: channel.name,
    provider: channel.provider,
    state: channel.state,
    healthy: channel.healthy,
    note: "Closed: every generation replica tries the channel again from now on",
  };
}
