import { clusterNode, startLocalCluster, type LocalBroker, type LocalClusterOptions } from "@orvado/kafka-local";
import { BILLING_TOPIC } from "@orvado/events";
import { partitionLeaders } from "./billing-topic-audit.ts";
import type { OwnPostgres } from "./own-postgres.ts";
import type { ProcessName, ProcessStack } from "./process-stack.ts";

// The fault schedule of the three-broker run (faults-three-brokers.kafka.test.ts), one
// fault after another so that each is seen on its own and a short run still spans them all:
// kill -9 of the broker leading the billing topic (then restarted on its store), SIGSTOP of
// another broker for 30 s (a broker that hangs rather than dies: connections stay open, nothing
// answers), kill -9 of one billing and one generation replica (restarted), and a restart of
// PostgreSQL (every connection cut, the server back on its port).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long the stopped broker stays stopped: longer than Kafka's session timeouts, so it is fenced and its partitions move. */
export const BROKER_STOP_MS = 30_000;
/** Jobs run between two faults so that each hits requests in flight. */
const BETWEEN_FAULTS_MS = 3_000;
/** Kafka fences a silent broker after broker.session.timeout.ms (9 s); a loaded machine may take longer. */
const LEADER_MOVE_TIMEOUT_MS = 90_000;
/** The replicas killed: one of billing's two, one of generation's two. */
const KILLED_REPLICAS: ProcessName[] = ["billing#2", "generation#2"];

export interface ScheduleTarget {
  clusterOptions: LocalClusterOptions;
  /** The running node of each node id (1, 2, 3); replaced when a node is restarted. */
  nodes: Map<number, LocalBroker>;
  stack: ProcessStack;
  postgres: OwnPostgres;
}

export class ThreeBrokerFaults {
  readonly #started = Date.now();
  /** What happened when (ms since the schedule began), for the summary and failure messages. */
  readonly timeline: string[] = [];
  /** The node SIGSTOPped, while it is: continued in afterAll if the test fails meanwhile. */
  stoppedPid: number | undefined;

  constructor(private readonly target: ScheduleTarget) {}

  #note(what: string): void {
    this.timeline.push(`${Date.now() - this.#started}ms ${what}`);
  }

  #addresses(except: number[] = []): string[] {
    return [...this.target.nodes.keys()].filter((id) => !except.includes(id)).map((id) => clusterNode(this.target.clusterOptions, id).address);
  }

  async run(): Promise<void> {
    await sleep(BETWEEN_FAULTS_MS);
    const killed = await this.killBillingLeader();
    await sleep(BETWEEN_FAULTS_MS);
    await this.stopAnotherBroker(killed);
    await sleep(BETWEEN_FAULTS_MS);
    await this.killReplicas();
    await sleep(BETWEEN_FAULTS_MS);
    await this.restartPostgres();
    await sleep(BETWEEN_FAULTS_MS);
    this.#note("schedule done");
  }

  /** The leader of each billing partition, asked of a new admin client (the topic appears with the first event). */
  async #leaders(except: number[] = []): Promise<Map<number, number>> {
    for (let attempt = 0; ; attempt++) {
      try {
        const leaders = await partitionLeaders(this.#addresses(except), BILLING_TOPIC);
        if (leaders.size > 0 && [...leaders.values()].every((leader) => leader > 0)) return leaders;
      } catch (error) {
        if (attempt >= 60) throw error;
      }
      await sleep(1_000);
    }
  }

  /** The survivors' answer once partition 0 has a leader other than the dead node. */
  async #newLeader(dead: number): Promise<number> {
    const deadline = Date.now() + LEADER_MOVE_TIMEOUT_MS;
    for (;;) {
      const leader = (await this.#leaders([dead])).get(0)!;
      if (leader !== dead) return leader;
      if (Date.now() > deadline) throw new Error(`billing partition 0 still led by the killed broker ${dead} after ${LEADER_MOVE_TIMEOUT_MS} ms`);
      await sleep(500);
    }
  }

  /** kill -9 of the node leading partition 0 of the billing topic, then its restart on the same store. */
  async killBillingLeader(): Promise<number> {
    const leaders = await this.#leaders();
    const leader = leaders.get(0)!;
    const distinct = new Set(leaders.values());
    const which = distinct.size === 1 ? "every billing partition" : `billing partition 0 (partitions led by nodes ${JSON.stringify(Object.fromEntries(leaders))})`;
    await this.target.nodes.get(leader)!.kill();
    this.#note(`kill -9 broker ${leader}, leader of ${which}`);
    // Down until the controller has fenced it and moved its leaderships: back sooner, it would lead again as if nothing happened.
    const successor = await this.#newLeader(leader);
    this.#note(`billing partition 0 led by broker ${successor}`);
    const { started } = await startLocalCluster(this.target.clusterOptions);
    for (const node of started) this.target.nodes.set(nodeIdOf(this.target.clusterOptions, node), node);
    this.#note(`broker ${leader} back`);
    return leader;
  }

  /** SIGSTOP of a broker other than the one just killed (the one now leading partition 0 when it is another), SIGCONT after BROKER_STOP_MS. */
  async stopAnotherBroker(killed: number): Promise<void> {
    const now = (await this.#leaders()).get(0)!;
    const others = [...this.target.nodes.keys()].filter((id) => id !== killed);
    const chosen = others.includes(now) ? now : others[0]!;
    const pid = this.target.nodes.get(chosen)!.pid;
    process.kill(pid, "SIGSTOP");
    this.stoppedPid = pid;
    this.#note(`SIGSTOP broker ${chosen}${chosen === now ? " (leader of billing partition 0)" : ""}`);
    await sleep(BROKER_STOP_MS);
    process.kill(pid, "SIGCONT");
    this.stoppedPid = undefined;
    this.#note(`SIGCONT broker ${chosen}`);
  }

  async killReplicas(): Promise<void> {
    await Promise.all(KILLED_REPLICAS.map((name) => this.target.stack.kill(name)));
    this.#note(`kill -9 ${KILLED_REPLICAS.join(", ")}`);
    await sleep(BETWEEN_FAULTS_MS);
    await Promise.all(KILLED_REPLICAS.map((name) => this.target.stack.restart(name)));
    this.#note(`${KILLED_REPLICAS.join(", ")} back`);
  }

  async restartPostgres(): Promise<void> {
    this.#note("PostgreSQL restart (pg_ctl restart -m fast)");
    await this.target.postgres.restart();
    this.#note("PostgreSQL back");
  }
}

/** The node id (from 1) of a node of the cluster, by its address. */
export function nodeIdOf(options: LocalClusterOptions, broker: LocalBroker): number {
  for (let id = 1; id <= options.nodes; id++) if (clusterNode(options, id).address === broker.address) return id;
  throw new Error(`${broker.address} is no node of the cluster`);
}
