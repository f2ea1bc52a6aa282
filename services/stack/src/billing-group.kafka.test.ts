import { afterAll, beforeAll, describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { testKafkaBrokers } from "@orvado/testkit";
import { startProcessesOnKafka, type E2eStack } from "./e2e-stack.ts";
import type { ProcessStack } from "./process-stack.ts";

// Issue F §5 on a real broker, over real HTTP and gRPC with the services as
// separate processes: two billing processes share the ledger's consumer group
// (the billing topic has 3 partitions, keyed by account); one is killed with
// -9 halfway, the other takes its partitions, and every event is settled once.

const { Kafka, AssignerProtocol, logLevel } = kafkajs;
const ACCOUNTS = 12;
const REQUESTS = 96;
const TOP_UP_MICROS = 100_000_000n;
const PRICE_MICROS = 20_000n; // config/prices.json: beta 1K

let stack: E2eStack & { processes: ProcessStack; topicPrefix: string };
let admin: kafkajs.Admin;
const keys: { accountId: string; key: string }[] = [];

beforeAll(async () => {
  stack = await startProcessesOnKafka({ KAFKA_TOPIC_PARTITIONS: "3" });
  await stack.processes.startReplica("billing", 2);
  admin = new Kafka({ clientId: "billing-group-test", brokers: testKafkaBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
  for (let i = 0; i < ACCOUNTS; i += 1) {
    const { account } = await auth.createAccount({ email: `group-${i}@example.test`, password: "group-password-1" });
    await billing.topUp({ accountId: account!.accountId, amountMicros: TOP_UP_MICROS, note: "group test" });
    keys.push({ accountId: account!.accountId, key: (await auth.createKey({ accountId: account!.accountId, name: "group" })).secret });
  }
}, 180_000);

afterAll(async () => {
  await admin?.disconnect();
  await stack?.close();
});

/** Each member of billing's group with the partitions of the billing topic it holds. */
async function ledgerGroupMembers(): Promise<{ state: string; partitions: number[][] }> {
  const groupId = `${stack.topicPrefix}billing-ledger`;
  const { groups } = await admin.describeGroups([groupId]);
  const group = groups[0]!;
  const partitions = group.members.map((member) => {
    const assignment = AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
    return [...(assignment?.assignment[`${stack.topicPrefix}orvado.billing.v1`] ?? [])].sort();
  });
  return { state: group.state, partitions };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const generate = (index: number) => {
  const { key } = keys[index % ACCOUNTS]!;
  const directive = index % 8 === 0 ? "[sandbox:fail]" : `[sandbox:delay=${(index * 37) % 400}]`;
  return fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "beta", prompt: `group job ${index} ${directive}`, response_format: "b64_json" }),
  });
};

describe("billing's consumer group on Kafka (two billing processes, real broker)", () => {
  it("shares the partitions, moves a killed member's partitions to the other, and settles every event once", async () => {
    const shared = await until(ledgerGroupMembers, (group) => group.state === "Stable" && group.partitions.length === 2, "two members");
    expect(shared.partitions.every((held) => held.length > 0), JSON.stringify(shared)).toBe(true);
    expect(shared.partitions.flat().sort()).toEqual([0, 1, 2]);

    const answers: Promise<Response>[] = [];
    for (let index = 0; index < REQUESTS; index += 1) {
      answers.push(generate(index));
      // Halfway through, the second billing process dies without a word to the group.
      if (index === REQUESTS / 2) await stack.processes.kill("billing#2");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const statuses = await Promise.all(answers.map(async (answer) => (await answer).status));
    expect(statuses.filter((status) => status === 200).length).toBe(REQUESTS - REQUESTS / 8);
    expect(statuses.filter((status) => status === 502).length).toBe(REQUESTS / 8);

    const alone = await until(ledgerGroupMembers, (group) => group.state === "Stable" && group.partitions.length === 1, "one member left");
    expect(alone.partitions[0]).toEqual([0, 1, 2]);

    // Every hold settles: a capture for each delivered image, a release for each failure, none twice.
    const rows = await until(
      async () =>
        (
          await stack.db.query<{ request_id: string; settled_by: string | null; captured_micros: bigint; captures: bigint; releases: bigint }>(`
            SELECT c.request_id, c.settled_by, c.captured_micros,
                   (SELECT count(*) FROM billing.ledger l WHERE l.request_id = c.request_id AND l.kind = 'capture') AS captures,
                   (SELECT count(*) FROM billing.ledger l WHERE l.request_id = c.request_id AND l.kind = 'release') AS releases
            FROM billing.cost_records c`)
        ).rows,
      (records) => records.length === REQUESTS && records.every((record) => record.settled_by !== null),
      "every hold settled",
    );
    const captured = rows.filter((row) => row.settled_by === "completed");
    expect(captured.length).toBe(REQUESTS - REQUESTS / 8);
    expect(captured.every((row) => row.captures === 1n && row.captured_micros === PRICE_MICROS)).toBe(true);
    const failed = rows.filter((row) => row.settled_by === "failed");
    expect(failed.length).toBe(REQUESTS / 8);
    expect(failed.every((row) => row.captures === 0n && row.releases === 1n)).toBe(true);

    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    expect((await billing.replayLedger({})).differences).toEqual([]);
  });
});
