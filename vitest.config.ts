import { defineConfig } from "vitest/config";
import { decideTestServices, needsContainers } from "./libs/testkit/src/test-services.ts";
import { BROWSER_SUITES, planBrowserSuites } from "./libs/testkit/src/browser-suites.ts";

// Two projects. "embedded" runs every suite on the Postgres log (the embedded
// default). "kafka" runs the suites that can run on either stream a second time
// on a real Kafka broker (ORVADO_TEST_STREAM=kafka; end-to-end suites then start
// the four services as separate processes), plus the Kafka-only suites
// (*.kafka.test.ts). It needs a broker and PostgreSQL: KAFKA_BROKERS (npm run
// kafka:up) and TEST_DATABASE_URL, or, for whichever is unset, a container where
// a Docker engine answers (libs/testkit/src/test-services.ts decides, once, here:
// the answer decides whether the project exists). CI (CI=true) must run it, so
// there it is never skipped.
const KAFKA_SUITES = [
  "services/stack/src/generation-path.test.ts",
  "services/stack/src/idempotency.test.ts",
  "services/stack/src/image-edits.test.ts",
  "services/stack/src/async-submit.test.ts",
  "services/stack/src/streaming.test.ts",
  "services/stack/src/faults.test.ts",
  "services/billing/src/settlement.test.ts",
  "services/billing/src/two-consumers.test.ts",
];
const KAFKA_ONLY = ["**/*.kafka.test.ts"];

// The browser suites (*-browser.test.ts) drive Debian's Chromium; where it is not
// installed they are left out with a printed reason (libs/testkit/src/browser-suites.ts),
// and CI, which must run them, refuses to start without it.

// What each project shares. Projects do not `extends: true` the root: the root's
// globalSetup would then run once per project (and start containers twice).
const shared = {
  exclude: ["**/node_modules/**"],
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

export default defineConfig(async () => {
  const plan = await decideTestServices(process.env);
  if (plan.refusal) throw new Error(plan.refusal);
  if (!plan.kafkaProject.runs) console.log(`kafka test project skipped: ${plan.kafkaProject.reason}`);
  const browsers = planBrowserSuites(process.env);
  if (browsers.refusal) throw new Error(browsers.refusal);
  if (!browsers.runs) console.log(`browser suites skipped (${BROWSER_SUITES.join(", ")}): ${browsers.reason}`);
  const containers = needsContainers(plan);
  if (containers) {
    console.log(`test services: PostgreSQL from ${plan.postgres.source} (${plan.postgres.reason})`);
    console.log(`test services: Kafka from ${plan.kafka.source} (${plan.kafka.reason})`);
  }

  return {
    test: {
      ...shared,
      // Starts the containers the plan asks for and exports TEST_DATABASE_URL / KAFKA_BROKERS to the test processes.
      globalSetup: containers ? ["./libs/testkit/src/test-containers.ts"] : [],
      provide: { testServices: plan },
      // Two cores: more workers only add contention on the shared PostgreSQL.
      maxWorkers: 2,
      projects: [
        {
          test: {
            ...shared,
            name: "embedded",
            include: ["libs/*/src/**/*.test.ts", "services/**/*.test.ts", "tools/*/src/**/*.test.ts", "examples/**/*.test.ts", "bench/**/*.test.ts"],
            exclude: [...shared.exclude, ...KAFKA_ONLY, ...(browsers.runs ? [] : BROWSER_SUITES)],
          },
        },
        ...(plan.kafkaProject.runs
          ? [{ test: { ...shared, name: "kafka", include: [...KAFKA_SUITES, ...KAFKA_ONLY], env: { ORVADO_TEST_STREAM: "kafka" } } }]
          : []),
      ],
    },
  };
});
