import { defineConfig } from "vitest/config";

// Two projects. "embedded" runs every suite on the Postgres log (the embedded
// default). "kafka" runs the suites that can run on either stream a second time
// on a real Kafka broker (ORVADO_TEST_STREAM=kafka; end-to-end suites then start
// the four services as separate processes), plus the Kafka-only suites
// (*.kafka.test.ts). It needs KAFKA_BROKERS (npm run kafka:up) and PostgreSQL
// (TEST_DATABASE_URL); CI (CI=true) must run it, so there it is never skipped.
const KAFKA_SUITES = [
  "services/stack/src/generation-path.test.ts",
  "services/stack/src/idempotency.test.ts",
  "services/stack/src/faults.test.ts",
  "services/billing/src/settlement.test.ts",
  "services/billing/src/two-consumers.test.ts",
];
const KAFKA_ONLY = ["**/*.kafka.test.ts"];

const kafkaBrokers = (process.env.KAFKA_BROKERS ?? "").trim();
const inCi = process.env.CI === "true";
if (inCi && (!kafkaBrokers || !process.env.TEST_DATABASE_URL)) {
  throw new Error("CI runs the Kafka suites: start a broker (npm run kafka:up) and set KAFKA_BROKERS and TEST_DATABASE_URL (.ci/run does both)");
}
const runKafka = Boolean(kafkaBrokers && process.env.TEST_DATABASE_URL);
if (!runKafka) {
  console.log(
    `kafka test project skipped: ${kafkaBrokers ? "TEST_DATABASE_URL is not set (its services run as separate processes on PostgreSQL)" : "KAFKA_BROKERS is not set (npm run kafka:up starts a broker)"}`,
  );
}

export default defineConfig({
  test: {
    exclude: ["**/node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more workers only add contention on the shared PostgreSQL.
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      {
        extends: true,
        test: {
          name: "embedded",
          include: ["libs/*/src/**/*.test.ts", "services/**/*.test.ts", "tools/*/src/**/*.test.ts", "examples/**/*.test.ts"],
          exclude: ["**/node_modules/**", ...KAFKA_ONLY],
        },
      },
      ...(runKafka
        ? [{ extends: true as const, test: { name: "kafka", include: [...KAFKA_SUITES, ...KAFKA_ONLY], env: { ORVADO_TEST_STREAM: "kafka" } } }]
        : []),
    ],
  },
});
