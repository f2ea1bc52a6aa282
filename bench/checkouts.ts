// `BENCH_A=<checkout> BENCH_B=<checkout> npm run bench:checkouts`: the same one-process
// Orvado from two checkouts of this repository (each with its own `npm ci`), side by
// side against one fake upstream, alternating round by round with direct calls, so that
// a change is measured against the code before it in one run on the same machine state.
// Each runs with its own checkout's Node flags (services/stack/src/node-flags.ts).
// Prints each round, then each one's p50, added p50 over direct and req/s (medians of the
// rounds, as npm run bench reports them), and writes bench/results/checkouts-<time>.json.
//
// Environment: BENCH_A, BENCH_B (required: checkout directories), BENCH_CONNECTIONS
// (default 1), BENCH_ROUNDS (default 6), BENCH_DURATION_S (per round, default 6);
// BENCH_TSX ("A", "B" or "A,B": run that one's orvado-main.ts through tsx, as npm start
// ran the stack before it was bundled; otherwise each is bundled as npm start bundles it);
// KAFKA_BROKERS puts both on Kafka, each with a topic prefix of its own; BENCH_SPREAD_ACCOUNTS
// (default 1) funds that many accounts in each and spreads the load over them, as npm run
// bench's "64 accounts" targets do.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { cpus, loadavg } from "node:os";
import { runLoad, type Target } from "./load.ts";
import { RESULTS_DIR, TSX, startUpstream, clearChildLogs, writeBenchCatalog, benchBundle, BENCH_SERVICE_ENV, logFile, type OrvadoInfo } from "./servers.ts";
import { directTarget, measure, orvadoTarget, smokeTest, spreadTarget } from "./targets.ts";
import { startReportingChild, type Child } from "./processes.ts";
import { fixed, formatTable } from "./stats.ts";
import { benchKafkaBrokers, benchKafkaSettings, kafkaEnv } from "./kafka.ts";

const checkouts = { A: process.env.BENCH_A, B: process.env.BENCH_B };
if (!checkouts.A || !checkouts.B) throw new Error("set BENCH_A and BENCH_B to two checkouts of this repository");
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 6);
const SPREAD_ACCOUNTS = Number(process.env.BENCH_SPREAD_ACCOUNTS ?? 1);
const THROUGH_TSX = new Set((process.env.BENCH_TSX ?? "").split(",").filter(Boolean));

const brokers = benchKafkaBrokers();

/** The Node flags a checkout runs its one-process stack with: its own, so that a change of flags is measured too. */
async function stackNodeFlags(root: string): Promise<readonly string[]> {
  const flags: { STACK_NODE_FLAGS: readonly string[] } = await import(pathToFileURL(join(root, "services", "stack", "src", "node-flags.ts")).href);
  return flags.STACK_NODE_FLAGS;
}
const nodeFlags = { A: await stackNodeFlags(checkouts.A), B: await stackNodeFlags(checkouts.B) };

clearChildLogs();
const loadAtStart = loadavg();
const upstream = await startUpstream();
const catalog = writeBenchCatalog(upstream.info.url, 100_000);
const children: Child<OrvadoInfo>[] = [];
const targets: Target[] = [directTarget(upstream.info.url)];
try {
  for (const [name, root] of Object.entries(checkouts) as [string, string][]) {
    const child = await startReportingChild<OrvadoInfo>({
      name: `Orvado ${name}`,
      // Each checkout's own bench/orvado-main.ts, bundled as npm start bundles the stack, with the flags its npm start uses.
      args: [...nodeFlags[name as "A" | "B"], ...(THROUGH_TSX.has(name) ? [...TSX, join(root, "bench", "orvado-main.ts")] : [await benchBundle("orvado-main", root)])],
      env: { ORVADO_MODELS_FILE: catalog, ...BENCH_SERVICE_ENV, BENCH_ORVADO_ACCOUNTS: String(SPREAD_ACCOUNTS), ...kafkaEnv(brokers.length > 0 ? benchKafkaSettings(brokers) : undefined) },
      logFile: logFile(`orvado-${name}`),
    });
    children.push(child);
    const target = { ...(SPREAD_ACCOUNTS > 1 ? spreadTarget(child.info) : orvadoTarget(child.info)), name };
    await smokeTest(target);
    targets.push(target);
  }
  for (const target of targets) await runLoad(target, 10, 4);
  const rounds: string[] = [];
  const { results } = await measure(targets, CONNECTIONS, { rounds: ROUNDS, durationS: DURATION_S, log: (line) => rounds.push(line) });
  const direct = results.find((result) => result.target === "direct")!.p50Ms;
  const rows: (string | number)[][] = [["target", "p50 ms", "added p50 ms", "req/s"]];
  for (const result of results) {
    const name = result.target === "direct" ? "direct" : `${result.target}: ${checkouts[result.target as "A" | "B"]}${THROUGH_TSX.has(result.target) ? " (tsx)" : ""} ${nodeFlags[result.target as "A" | "B"].join(" ")}`;
    rows.push([name, fixed(result.p50Ms), result.target === "direct" ? "" : fixed(result.p50Ms - direct), fixed(result.rps, 0)]);
  }
  process.stdout.write(`\n${rounds.join("\n")}\n\n${formatTable(rows)}\nc=${CONNECTIONS}${SPREAD_ACCOUNTS > 1 ? ` over ${SPREAD_ACCOUNTS} accounts` : ""}, ${ROUNDS} × ${DURATION_S}-s rounds, ${brokers.length > 0 ? "Kafka" : "the Postgres log"}; load average (1 min) ${fixed(loadAtStart[0]!)} → ${fixed(loadavg()[0]!)} on ${cpus().length} CPUs\n`);
  const file = join(RESULTS_DIR, `checkouts-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify({ when: new Date().toISOString(), checkouts, nodeFlags, settings: { connections: CONNECTIONS, spreadAccounts: SPREAD_ACCOUNTS, rounds: ROUNDS, durationS: DURATION_S, kafkaBrokers: brokers, throughTsx: [...THROUGH_TSX] }, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg(), results }, null, 2));
  process.stdout.write(`wrote ${file}\n`);
} finally {
  for (const child of children) await child.stop();
  await upstream.stop();
}
