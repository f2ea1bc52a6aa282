import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BillingService, type BillingEvent } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { usdToMicros } from "@orvado/core";
import { openDb, type Db } from "@orvado/db";
import { BILLING_TOPIC } from "@orvado/events";
import { freeClusterBasePort, startLocalCluster, stopLocalCluster, type LocalBroker, type LocalClusterOptions } from "@orvado/kafka-local";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { seededRandom } from "@orvado/testkit/seeded-random";
import { ProcessStack, SERVICE_NAMES, replicaName, type ProcessName } from "./process-stack.ts";
import { FAULT_SWEEP_ENV, firstComplaints, fundFaultAccount, outcomeCounts, runFaultJobs, sendFaultJob, type ClientOutcome } from "./fault-jobs.ts";
import { startOwnPostgres, type OwnPostgres } from "./own-postgres.ts";
import { BROKER_STOP_MS, ThreeBrokerFaults, nodeIdOf } from "./three-broker-faults.ts";
import { groupLag, readBillingEvents } from "./billing-topic-audit.ts";
import { capturesByRequest, orvadoCli, seeRequest, type RequestSeen } from "./outside-view.ts";

// Issue P §3, the replicated fault test on three brokers. Transports: real HTTP (clients to
// two edges, the public cost and job lookups, image files), real Connect RPC between the
// services (two processes of each), real PostgreSQL (a server of the test's own, restarted),
// real Kafka (three KRaft brokers of the test's own), the `orvado` CLI as a process.
// While FAULT_JOBS jobs (and more, until the schedule ends) run, three-broker-faults.ts kills
// the billing topic's leader, SIGSTOPs another broker for 30 s, kills a billing and a generation
// replica and restarts PostgreSQL. The money is then checked from the outside: the CLI (ledger
// replay, statement, account), the public HTTP API and the billing topic read with kafkajs.

const JOBS = Number(process.env.FAULT_JOBS ?? 60);
const CONCURRENCY = Number(process.env.FAULT_CONCURRENCY ?? 16);
const SEED = Number(process.env.FAULT_SEED ?? Date.now() % 100_000);
const TOP_UP_MICROS = 1_000n * 1_000_000n;
const SETTLE_TIMEOUT_MS = 240_000;
const LEDGER_GROUP = "billing-ledger";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let postgres: OwnPostgres;
let database: FreshDatabase;
let db: Db;
let dataDir: string;
let clusterOptions: LocalClusterOptions;
let brokers: string[];
const nodes = new Map<number, LocalBroker>();
let stack: ProcessStack;
let faults: ThreeBrokerFaults | undefined;
let accountId: string;
let apiKey: string;
const warnings: string[] = [];
const processes: ProcessName[] = SERVICE_NAMES.flatMap((name) => [replicaName(name, 1), replicaName(name, 2)]);

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "orvado-three-brokers-"));
  postgres = await startOwnPostgres();
  database = await freshDatabase(postgres.url);
  clusterOptions = { dataDir: join(dataDir, "kafka"), nodes: 3, basePort: await freeClusterBasePort(3), heapMb: 384 };
  const cluster = await startLocalCluster(clusterOptions);
  brokers = cluster.addresses;
  for (const node of cluster.started) nodes.set(nodeIdOf(clusterOptions, node), node);
  stack = await ProcessStack.start({
    databaseUrl: database.url,
    dataDir,
    replicas: { auth: 2, billing: 2, generation: 2, edge: 2 },
    env: {
      KAFKA_BROKERS: brokers.join(","),
      // A member that died with its process gives up its partitions after 6 s, Kafka's shortest session.
      KAFKA_SESSION_TIMEOUT_MS: "6000",
      ...FAULT_SWEEP_ENV,
      // The check looks up every request's cost from one address.
      BILLING_COST_LOOKUP_MAX_PER_WINDOW: "1000000",
    },
    onLog: firstComplaints(warnings),
  });
  db = await openDb(database.url);
  ({ accountId, apiKey } = await fundFaultAccount(stack, {
    email: "three-brokers@example.test",
    topUpMicros: TOP_UP_MICROS,
    note: "three-broker fault test",
    topUpId: `topup_three_brokers_${SEED}`,
  }));
}, 300_000);

afterAll(async () => {
  if (faults?.stoppedPid !== undefined) process.kill(faults.stoppedPid, "SIGCONT");
  await stack?.stop();
  await db?.close();
  if (clusterOptions) await stopLocalCluster(clusterOptions.dataDir);
  await database?.drop();
  await postgres?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 180_000);

/** The CLI's environment: every replica's address and the services' secret. */
function cliEnv(): NodeJS.ProcessEnv {
  const urls = (name: (typeof SERVICE_NAMES)[number]) => [stack.urlOf(replicaName(name, 1)), stack.urlOf(replicaName(name, 2))].join(",");
  return { ORVADO_AUTH_URL: urls("auth"), ORVADO_BILLING_URL: urls("billing"), ORVADO_GENERATION_URL: urls("generation"), ORVADO_INTERNAL_SECRET: stack.secret, ORVADO_DATA_DIR: dataDir };
}

/**
 * Until nothing is in flight: no hold open, no job running, no event unsent (the
 * database), and billing's group at the end of the billing topic (a new admin client).
 */
async function untilSettled(): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const { rows } = await db.query<{ holds: bigint; running: bigint; unsent: bigint }>(`
      SELECT (SELECT count(*) FROM billing.cost_records WHERE settled_by IS NULL) AS holds,
             (SELECT count(*) FROM generation.jobs WHERE status = 'running') AS running,
             (SELECT count(*) FROM generation.outbox WHERE sent_at IS NULL) + (SELECT count(*) FROM billing.outbox WHERE sent_at IS NULL) AS unsent`);
    const lag = await groupLag(brokers, BILLING_TOPIC, LEDGER_GROUP).catch(() => -1n);
    const open = { ...rows[0]!, lag };
    if (open.holds === 0n && open.running === 0n && open.unsent === 0n && open.lag === 0n) return;
    if (Date.now() > deadline) throw new Error(`not settled after ${SETTLE_TIMEOUT_MS} ms: ${JSON.stringify(open, (_, v) => (typeof v === "bigint" ? Number(v) : v))}`);
    await sleep(1_000);
  }
}

/** Distinct `completed` event ids, and how many records carried them, per request id. */
function completedByRequest(events: BillingEvent[]): Map<string, { ids: Set<string>; records: number }> {
  const completed = new Map<string, { ids: Set<string>; records: number }>();
  for (const event of events) {
    if (event.kind.case !== "completed") continue;
    const seen = completed.get(event.requestId) ?? { ids: new Set<string>(), records: 0 };
    seen.ids.add(event.eventId);
    seen.records += 1;
    completed.set(event.requestId, seen);
  }
  return completed;
}

interface Evidence {
  outcomes: ClientOutcome[];
  seen: Map<string, RequestSeen>;
  captures: Map<string, bigint[]>;
  completed: Map<string, { ids: Set<string>; records: number }>;
}

interface RequestEvidence {
  id: string;
  answer: string;
  request: RequestSeen;
  captured: bigint[];
  completedIds: string[];
}

/** A request whose images were delivered: one capture of its cost, its images read back, one completed event. */
function deliveredProblems({ id, answer, request, captured, completedIds }: RequestEvidence): string[] {
  const problems: string[] = [];
  if (request.costStatus !== "charged") problems.push(`${id}: ${answer}, cost record ${request.costStatus}`);
  if (captured.length !== 1) problems.push(`${id}: ${answer}, ${captured.length} captures in the statement`);
  if (captured.length === 1 && captured[0] !== request.amountMicros) problems.push(`${id}: captured ${captured[0]}, cost record says ${request.amountMicros}`);
  if (request.lookupStatus !== 200 || request.imagesReadBack !== request.imagesDelivered || request.imagesDelivered < 1) {
    problems.push(`${id}: charged for ${request.imagesDelivered} image(s), lookup ${request.lookupStatus} read back ${request.imagesReadBack}`);
  }
  // Billing de-duplicates completed events by event id (`<request id>:completed`): a record sent twice is one event.
  if (completedIds.length !== 1 || completedIds[0] !== `${id}:completed`) problems.push(`${id}: completed event ids on the topic ${JSON.stringify(completedIds)}`);
  return problems;
}

/** A request that delivered nothing: not charged, not held, no completed event. */
function undeliveredProblems({ id, answer, request, captured, completedIds }: RequestEvidence): string[] {
  const problems: string[] = [];
  if (request.costStatus === "charged" || request.costStatus === "pending") problems.push(`${id}: ${answer}, cost record ${request.costStatus}`);
  if (captured.length > 0) problems.push(`${id}: ${answer}, captured in the statement`);
  if (completedIds.length > 0) problems.push(`${id}: ${answer}, yet a completed event on the topic`);
  return problems;
}

/**
 * A 200 is charged once, with its images read back, and has one `completed` on the topic.
 * Any other answer is charged nothing and has no `completed`, except 502 job_outcome_unknown:
 * that answer says the outcome is not known and sends the client to the job lookup, so such a
 * request may have been charged, and then the lookup must return its images.
 */
function moneyProblems({ outcomes, seen, captures, completed }: Evidence): string[] {
  const problems: string[] = [];
  const answered = new Set<string>();
  for (const outcome of outcomes) {
    if (outcome.requestId === null) continue;
    const id = outcome.requestId;
    answered.add(id);
    const evidence = { id, answer: `${outcome.status} ${outcome.code ?? ""}`.trim(), request: seen.get(id)!, captured: captures.get(id) ?? [], completedIds: [...(completed.get(id)?.ids ?? [])] };
    const delivered = outcome.status === 200 || (outcome.code === "job_outcome_unknown" && evidence.request.costStatus === "charged");
    problems.push(...(delivered ? deliveredProblems(evidence) : undeliveredProblems(evidence)));
    if (outcome.code === "internal_error") problems.push(`${id}: answered 500 internal_error`);
  }
  // Money taken or images reported for a request no client was answered about.
  for (const id of captures.keys()) if (!answered.has(id)) problems.push(`${id}: captured, but no client got an answer naming it`);
  for (const id of completed.keys()) if (!answered.has(id)) problems.push(`${id}: completed on the topic, but no client got an answer naming it`);
  return problems;
}

/**
 * For a failure's message: when each request a problem names was sent and answered, and what
 * generation's job row and billing's cost record say of it, in ms since the fault schedule began
 * (the schedule's own lines use the same clock).
 */
async function problemTimelines(problems: string[], outcomes: ClientOutcome[], scheduleStart: number): Promise<string> {
  const ids = [...new Set(problems.map((problem) => problem.split(":")[0]!))].slice(0, 5);
  const at = (time: Date | number | null) => (time === null ? "-" : `${(typeof time === "number" ? time : time.getTime()) - scheduleStart}ms`);
  const lines: string[] = [];
  for (const id of ids) {
    const answer = outcomes.find((outcome) => outcome.requestId === id);
    const job = (await db.query<{ status: string; channel: string; created_at: Date; finished_at: Date | null }>("SELECT status, channel, created_at, finished_at FROM generation.jobs WHERE request_id = $1", [id])).rows[0];
    const cost = (await db.query<{ settled_by: string | null; created_at: Date; settled_at: Date | null; hold_expires_at: Date }>("SELECT settled_by, created_at, settled_at, hold_expires_at FROM billing.cost_records WHERE request_id = $1", [id])).rows[0];
    lines.push(
      `${id}: sent ${answer ? at(answer.sentAt) : "-"}, answered ${answer ? at(answer.answeredAt) : "-"}; ` +
        `job ${job ? `${job.status} on ${job.channel}, created ${at(job.created_at)}, finished ${at(job.finished_at)}` : "none"}; ` +
        `hold ${cost ? `reserved ${at(cost.created_at)}, expires ${at(cost.hold_expires_at)}, settled by ${cost.settled_by} at ${at(cost.settled_at)}` : "none"}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

describe(`three brokers (real Kafka), two of every service (Connect RPC), own PostgreSQL: ${JOBS} jobs over HTTP through scheduled faults (seed ${SEED})`, () => {
  it("charges every 200 once with its image stored and nothing else, settles, and the topic holds one completed per 200", { timeout: 600_000 + JOBS * 400 }, async () => {
    const random = seededRandom(SEED);
    faults = new ThreeBrokerFaults({ clusterOptions, nodes, stack, postgres });
    const scheduleStart = Date.now();
    let scheduleDone = false;
    const schedule = faults.run().finally(() => (scheduleDone = true));
    // Awaited once the jobs are done; a fault that fails meanwhile is not an unhandled rejection.
    schedule.catch(() => {});
    const outcomes = await runFaultJobs({
      jobs: JOBS,
      concurrency: CONCURRENCY,
      edges: () => [stack.urlOf("edge"), stack.urlOf("edge#2")],
      send: (index, edge) => sendFaultJob(edge, apiKey, index, random),
      balanced: true,
      keepGoing: () => !scheduleDone,
    });
    await schedule;
    for (const name of processes) if (!stack.isRunning(name)) await stack.restart(name);
    await untilSettled();

    const byStatus = outcomeCounts(outcomes);
    const jobs = new Set(outcomes.map((outcome) => outcome.index)).size;
    console.info(`faults three-brokers seed=${SEED} jobs=${jobs} stop=${BROKER_STOP_MS}ms faults=${JSON.stringify(faults.timeline)} client outcomes=${JSON.stringify(byStatus)}`);
    const context = `${JSON.stringify(byStatus)}\n${faults.timeline.join("\n")}\nservice warnings:\n${warnings.join("\n")}`;
    expect(jobs).toBeGreaterThanOrEqual(JOBS);
    const succeeded = outcomes.filter((outcome) => outcome.status === 200).length;
    expect(succeeded, context).toBeGreaterThanOrEqual(Math.max(10, JOBS * 0.25));

    // The operator's view: the CLI as a process.
    const env = cliEnv();
    const replay = await orvadoCli(env, "ledger", "replay");
    expect({ code: replay.code, differences: replay.json?.differences, stderr: replay.stderr }).toEqual({ code: 0, differences: [], stderr: "" });
    const statement = await orvadoCli(env, "ledger", "statement", "--account", accountId);
    expect(statement.code, statement.stderr).toBe(0);
    const shown = await orvadoCli(env, "accounts", "show", "--account", accountId);
    expect(shown.json).toMatchObject({ held_usd: "0.000000", balance_usd: statement.json.closing_balance_usd });
    expect(statement.json.closing_held_usd).toBe("0.000000");
    const captures = capturesByRequest(statement.json);

    // The clients' view: every request id an answer named, through the public HTTP API.
    const seen = new Map<string, RequestSeen>();
    for (const id of new Set(outcomes.flatMap((outcome) => (outcome.requestId ? [outcome.requestId] : [])))) seen.set(id, await seeRequest(stack.urlOf("edge"), apiKey, id));

    // The topic's view: every record on it, read with kafkajs from the beginning, and billing's group at its end.
    const completed = completedByRequest(await readBillingEvents(brokers, BILLING_TOPIC));
    expect(await groupLag(brokers, BILLING_TOPIC, LEDGER_GROUP)).toBe(0n);

    const problems = moneyProblems({ outcomes, seen, captures, completed });
    const timelines = problems.length > 0 ? await problemTimelines(problems, outcomes, scheduleStart) : "";
    expect(problems, `${problems.slice(0, 20).join("\n")}\n${timelines}${context}`).toEqual([]);

    // The balance is the top-up less every capture, in the statement and in billing's answer.
    const totalCaptured = [...captures.values()].flat().reduce((sum, micros) => sum + micros, 0n);
    expect(usdToMicros(statement.json.closing_balance_usd)).toBe(TOP_UP_MICROS - totalCaptured);
    const { balance } = await internalClient(BillingService, stack.url("billing"), stack.secret).getBalance({ accountId });
    expect(balance!.balanceMicros).toBe(TOP_UP_MICROS - totalCaptured);
    expect(balance!.heldMicros).toBe(0n);
    const duplicates = [...completed.values()].reduce((sum, seen) => sum + seen.records - seen.ids.size, 0);
    const unknownCharged = outcomes.filter((outcome) => outcome.code === "job_outcome_unknown" && seen.get(outcome.requestId!)?.costStatus === "charged").length;
    console.info(
      `faults three-brokers: ${captures.size} charged (${unknownCharged} of them answered job_outcome_unknown), ${totalCaptured} micro-USD, ${duplicates} completed record(s) sent again (de-duplicated by event id)`,
    );
  });
});
