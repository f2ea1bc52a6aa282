import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { testKafkaBrokers } from "@orvado/testkit";
import { startProcessesOnKafka } from "../../services/stack/src/e2e-stack.ts";

// Issue F §6: the analyst's example consumer, run as its own process against a
// real broker after a known run of Orvado (the four services as processes, on
// Kafka): from the beginning, in its own group, it prints each event decoded
// with the published schema.

type Stack = Awaited<ReturnType<typeof startProcessesOnKafka>>;
let stack: Stack;
let consumer: ChildProcess | undefined;
/** Everything the example wrote to standard error (also passed through to the test's). */
let consumerStderr = "";

beforeAll(async () => {
  stack = await startProcessesOnKafka();
}, 180_000);

afterAll(async () => {
  if (consumer && consumer.exitCode === null) {
    consumer.kill("SIGTERM");
    await once(consumer, "exit");
  }
  await stack?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
type Line = { partition: number; offset: string; duplicate: boolean; event: any };

/** Starts the example and collects its event lines until `enough` holds. */
async function consumeUntil(enough: (lines: Line[]) => boolean): Promise<Line[]> {
  const script = fileURLToPath(new URL("./consumer.ts", import.meta.url));
  consumer = spawn(process.execPath, ["--import", "tsx", script, "--from-beginning"], {
    env: { ...process.env, KAFKA_BROKERS: testKafkaBrokers().join(","), KAFKA_TOPIC_PREFIX: stack.topicPrefix, GROUP_ID: "analyst-test" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  consumer.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    consumerStderr += chunk;
    process.stderr.write(chunk);
  });
  const lines: Line[] = [];
  let buffer = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the consumer printed ${lines.length} events in 60 s: ${JSON.stringify(lines)}`)), 60_000);
    consumer!.once("exit", (code) => reject(new Error(`the consumer exited with ${code}`)));
    consumer!.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const parsed = JSON.parse(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
        if (parsed.event) lines.push(parsed);
      }
      if (enough(lines)) {
        clearTimeout(timer);
        resolve(lines);
      }
    });
  });
}

describe("examples/kafka-billing-consumer against a real broker", () => {
  it("prints a known run's reserved, completed and failed events, decoded", async () => {
    const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    const { account } = await auth.createAccount({ email: "analyst@example.test", password: "analyst-password-1" });
    const accountId = account!.accountId;
    await billing.topUp({ accountId, amountMicros: 1_000_000n, note: "analyst test" });
    const { secret, key } = await auth.createKey({ accountId, name: "analyst" });
    const generate = async (prompt: string, size: string) => {
      const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "beta", prompt, size, response_format: "b64_json" }),
      });
      return { status: response.status, requestId: response.headers.get("x-request-id")! };
    };
    const done = await generate("a lighthouse at dusk", "1536x1024");
    const refused = await generate("refused [sandbox:refuse]", "1024x1024");
    expect([done.status, refused.status]).toEqual([200, 502]);

    const lines = await consumeUntil((seen) => seen.length >= 4);
    const byId = new Map(lines.map((line) => [line.event.eventId, line.event]));
    expect([...byId.keys()].sort()).toEqual(
      [`${done.requestId}:reserved`, `${done.requestId}:completed`, `${refused.requestId}:reserved`, `${refused.requestId}:failed`].sort(),
    );
    const common = { accountId, keyId: key!.keyId };
    expect(byId.get(`${done.requestId}:reserved`)).toMatchObject({
      ...common,
      requestId: done.requestId,
      reserved: { model: "beta", tier: "TIER_1K", size: "1536x1024", imagesRequested: 1, unitPriceMicros: "20000", amountMicros: "20000" },
    });
    expect(byId.get(`${done.requestId}:completed`)).toMatchObject({ ...common, requestId: done.requestId, completed: { imagesDelivered: 1 } });
    expect(byId.get(`${refused.requestId}:failed`)).toMatchObject({
      ...common,
      requestId: refused.requestId,
      failed: { code: "ERROR_CODE_ASYNC_IMAGE_FAILED" },
    });
    // One account's events share a partition, so they arrive in publish order per producer.
    expect(new Set(lines.map((line) => line.partition)).size).toBe(1);
    expect(lines.every((line) => line.duplicate === false)).toBe(true);
    // Node warns of kafkajs 2.2.4's negative timer unless the example loads Orvado's fix (kafkajs-request-queue.ts).
    expect(consumerStderr).not.toMatch(/TimeoutNegativeWarning/);
  });
});
