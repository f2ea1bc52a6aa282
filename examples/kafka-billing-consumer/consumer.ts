// An example analyst's consumer of Orvado's billing events on Kafka (kafkajs).
//
//   KAFKA_BROKERS=broker:9092 node --import tsx examples/kafka-billing-consumer/consumer.ts [--from-beginning]
//
// It prints each event as one JSON line and, every 10 s, the charged USD per
// account. Use your own group id (GROUP_ID): never "billing-ledger", which is
// billing's. KAFKA_TOPIC_PREFIX must match Orvado's when it sets one.
import { Kafka, logLevel } from "kafkajs";
import { microsToUsd } from "@orvado/core";
import { BILLING_TOPIC } from "@orvado/events";
import { fixKafkajsRequestQueue } from "@orvado/events/kafkajs-request-queue";
import { SpendByAccount, billingEventJson, decodeBillingEvent } from "./spend.ts";

const brokers = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
if (brokers.length === 0) {
  console.error("Set KAFKA_BROKERS (host:port,…) to the brokers Orvado publishes to.");
  process.exit(2);
}

// kafkajs 2.2.4, its last release, otherwise wakes this process every millisecond per idle broker
// connection and, on Node 24, warns of a negative timeout (tulios/kafkajs#1704, #1751): Orvado's
// services load the same fix.
fixKafkajsRequestQueue();

const kafka = new Kafka({ clientId: "orvado-example-analyst", brokers, logLevel: logLevel.WARN });
const consumer = kafka.consumer({ groupId: `${process.env.KAFKA_TOPIC_PREFIX ?? ""}${process.env.GROUP_ID ?? "orvado-example-analyst"}` });
const spend = new SpendByAccount();

// kafkajs restarts the consumer after the failures it deems retriable (a broker's death, a group
// forming). After any other it stops for good: exit, so that whatever runs this process starts it
// again, from the group's committed offsets, rather than idle while looking alive.
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (payload.restart) return;
  console.error(`the consumer stopped: ${payload.error.message}`);
  process.exit(1);
});

await consumer.connect();
await consumer.subscribe({ topic: `${process.env.KAFKA_TOPIC_PREFIX ?? ""}${BILLING_TOPIC}`, fromBeginning: process.argv.includes("--from-beginning") });
await consumer.run({
  async eachMessage({ message, partition }) {
    if (!message.value) return;
    const event = decodeBillingEvent(message.value);
    const fresh = spend.add(event);
    console.log(JSON.stringify({ partition, offset: message.offset, duplicate: !fresh, event: billingEventJson(event) }));
  },
});

const report = setInterval(() => {
  const totals = Object.fromEntries([...spend.totals()].map(([account, micros]) => [account, microsToUsd(micros)]));
  console.log(JSON.stringify({ charged_usd_by_account: totals }));
}, 10_000);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    clearInterval(report);
    await consumer.disconnect();
    process.exit(0);
  });
}
