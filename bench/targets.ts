// What the benchmarks drive and how: the request each target gets (the same
// prompt and size everywhere), a smoke test before measuring, Orvado started
// against the fake upstream, and rounds that alternate the targets.
import { combine, runLoad, type LoadResult, type Target } from "./load.ts";
import type { SettlementBacklog } from "./ledger-check.ts";
import type { KafkaSettings } from "@orvado/events";
import type { Settlement } from "./settlement.ts";
import { BENCH_MODEL, startOrvado, writeBenchCatalog, type OrvadoInfo } from "./servers.ts";
import type { Child } from "./processes.ts";
import { fixed } from "./stats.ts";

const PROMPT = "a lighthouse on a cliff at dusk, oil painting";

export function directTarget(upstreamUrl: string): Target {
  const body = JSON.stringify({ model: "gpt-image-1", prompt: PROMPT, size: "1024x1024", response_format: "b64_json" });
  return { name: "direct", url: `${upstreamUrl}/v1/images/generations`, headers: { authorization: "Bearer sk-bench" }, body };
}

export function portkeyTarget(portkeyUrl: string, upstreamUrl: string): Target {
  return {
    ...directTarget(upstreamUrl),
    name: "Portkey",
    url: `${portkeyUrl}/v1/images/generations`,
    headers: { authorization: "Bearer sk-bench", "x-portkey-provider": "openai", "x-portkey-custom-host": `${upstreamUrl}/v1` },
  };
}

/** The name of the Postgres-log leg's single-account target; the Kafka leg's is ORVADO_ON_KAFKA, start:cluster's ORVADO_CLUSTER. */
export const ORVADO = "Orvado";
export const ORVADO_ON_KAFKA = "Orvado on Kafka";
export const ORVADO_CLUSTER = "Orvado cluster";

/** A leg's targets are named after its topology and the stream its Orvado uses. */
export function orvadoLegName(info: Pick<OrvadoInfo, "kafka" | "cluster">): string {
  if (info.cluster) return ORVADO_CLUSTER;
  return info.kafka ? ORVADO_ON_KAFKA : ORVADO;
}

export function orvadoTarget(info: OrvadoInfo): Target {
  const body = JSON.stringify({ model: BENCH_MODEL, prompt: PROMPT, size: "1024x1024", response_format: "b64_json" });
  return { name: orvadoLegName(info), url: `${info.edgeUrl}/v1/images/generations`, headers: { authorization: `Bearer ${info.key}` }, body };
}

/** The many-accounts target's name for a leg ("Orvado, 64 accounts", "Orvado on Kafka, 64 accounts"). */
export function spreadTargetName(leg: string, accounts: number): string {
  return `${leg}, ${accounts} accounts`;
}

export function spreadTarget(info: OrvadoInfo): Target {
  return { ...orvadoTarget(info), name: spreadTargetName(orvadoLegName(info), info.accounts.length), keys: info.accounts.map((account) => account.key) };
}

export function orvadoTargets(info: OrvadoInfo): Target[] {
  return info.accounts.length > 1 ? [orvadoTarget(info), spreadTarget(info)] : [orvadoTarget(info)];
}

/** One request through each target; a target that cannot answer 200 is not measured. */
export async function smokeTest(target: Target): Promise<void> {
  const response = await fetch(target.url, { method: "POST", headers: { "content-type": "application/json", ...target.headers }, body: target.body });
  const text = await response.text();
  if (response.status !== 200 || !text.includes("b64_json")) throw new Error(`${target.name} answered ${response.status}: ${text.slice(0, 300)}`);
}

export interface OrvadoStart {
  /** Write a V8 CPU profile of the Orvado process into this directory on exit. */
  profileDir?: string;
  /** Put the events on Kafka (the "Orvado on Kafka" leg). */
  kafka?: KafkaSettings;
  /** More Node flags for the Orvado process. */
  nodeFlags?: readonly string[];
}

/** Orvado with `accounts` funded accounts in front of the upstream, smoke-tested; null (and logged) if it cannot start. */
export async function tryStartOrvado(upstreamUrl: string, accounts: number, log: (message: string) => void, start: OrvadoStart = {}): Promise<Child<OrvadoInfo> | null> {
  try {
    const orvado = await startOrvado({
      modelsFile: writeBenchCatalog(upstreamUrl, 100_000),
      cpuProfileDir: start.profileDir,
      kafka: start.kafka,
      nodeFlags: start.nodeFlags,
      env: { BENCH_ORVADO_ACCOUNTS: String(Math.max(1, accounts)) },
    });
    try {
      await smokeTest(orvadoTarget(orvado.info));
    } catch (error) {
      await orvado.stop();
      throw error;
    }
    return orvado;
  } catch (error) {
    log(`${orvadoLegName(start)} leg skipped: ${(error as Error).message.split("\n")[0]}`);
    return null;
  }
}

export interface Comparison {
  connections: number;
  results: LoadResult[];
  /** Per Orvado round: what billing still had to settle when the round ended. */
  backlogs: ({ target: string; round: number } & SettlementBacklog)[];
}

export interface RoundSettings {
  rounds: number;
  durationS: number;
  log: (message: string) => void;
  /** By target name: after that target's round, wait until its Orvado's billing has settled it. */
  settlements?: ReadonlyMap<string, Settlement>;
}

/**
 * Every target once per round, in a rotating order, so drift on a shared machine hits all alike.
 * After an Orvado round the next one starts only once billing has settled everything that
 * round charged (settlements), so Orvado's settling is never done in another target's time.
 */
export async function measure(targets: Target[], connections: number, settings: RoundSettings): Promise<Comparison> {
  const { rounds, durationS, log, settlements } = settings;
  const runs = new Map<string, LoadResult[]>(targets.map((target) => [target.name, []]));
  const backlogs: Comparison["backlogs"] = [];
  for (let round = 0; round < rounds; round += 1) {
    for (let index = 0; index < targets.length; index += 1) {
      const target = targets[(index + round) % targets.length]!;
      const result = await runLoad(target, connections, durationS);
      const backlog = (await settlements?.get(target.name)?.untilSettled()) ?? null;
      if (backlog) backlogs.push({ target: target.name, round: round + 1, ...backlog });
      const settled = backlog ? `; ${backlog.pendingAtEnd} holds left to settle, settled ${fixed(backlog.drainedMs / 1000, 1)} s later` : "";
      log(`c=${connections} round ${round + 1}/${rounds} ${target.name}: ${fixed(result.rps, 0)} req/s, p50 ${fixed(result.p50Ms)} ms, errors ${result.errors}${settled}`);
      runs.get(target.name)!.push(result);
    }
  }
  return { connections, results: targets.map((target) => combine(runs.get(target.name)!)), backlogs };
}
