import { probeDocker, type DockerStatus } from "./docker-probe.ts";

// Where a test run gets PostgreSQL and Kafka from. vitest.config.ts asks once,
// when it loads, because the answer decides whether the project "kafka" exists;
// test-containers.ts (its globalSetup) then starts whatever the plan says runs
// in a container.

/** env: TEST_DATABASE_URL. container: postgres:16 via testcontainers. pglite: in-memory, in each test process. */
export type PostgresSource = "env" | "container" | "pglite";
/** env: KAFKA_BROKERS. container: a single-node KRaft broker via testcontainers. none: the Kafka suites do not run. */
export type KafkaSource = "env" | "container" | "none";

export interface TestServicesPlan {
  postgres: { source: PostgresSource; reason: string };
  kafka: { source: KafkaSource; reason: string };
  /** The project "kafka" needs a broker and PostgreSQL (its services run as processes, which cannot share a PGlite). */
  kafkaProject: { runs: boolean; reason: string };
  /** Set when the run must not start: with CI=true the Kafka suites have to run. */
  refusal?: string;
}

/** The variables the choice reads. */
export interface TestServicesEnv {
  TEST_DATABASE_URL?: string;
  KAFKA_BROKERS?: string;
  CI?: string;
  /** off (or 0, false, no): never start containers, even where Docker answers. */
  ORVADO_TEST_CONTAINERS?: string;
}

/** True when something is unset and containers are allowed: only then is Docker worth asking. */
export function dockerWanted(env: TestServicesEnv): boolean {
  return !containersTurnedOff(env) && (!given(env.TEST_DATABASE_URL) || !given(env.KAFKA_BROKERS));
}

/**
 * The choice itself, pure: a service given by env is used as given; otherwise a
 * container where Docker answers (and containers are not turned off); otherwise
 * the fallback of a machine without Docker (PGlite; no Kafka suites).
 */
export function planTestServices(env: TestServicesEnv, docker: DockerStatus): TestServicesPlan {
  const turnedOff = containersTurnedOff(env);
  const containers = docker.answers && !turnedOff;
  const noContainer = turnedOff ? "containers are turned off (ORVADO_TEST_CONTAINERS)" : `no Docker engine answers (${docker.detail})`;

  const postgres: TestServicesPlan["postgres"] = given(env.TEST_DATABASE_URL)
    ? { source: "env", reason: "TEST_DATABASE_URL is set" }
    : containers
      ? { source: "container", reason: `TEST_DATABASE_URL is not set and Docker answers (${docker.detail})` }
      : { source: "pglite", reason: `TEST_DATABASE_URL is not set and ${noContainer}` };

  const kafka: TestServicesPlan["kafka"] = given(env.KAFKA_BROKERS)
    ? { source: "env", reason: "KAFKA_BROKERS is set" }
    : containers
      ? { source: "container", reason: `KAFKA_BROKERS is not set and Docker answers (${docker.detail})` }
      : { source: "none", reason: `KAFKA_BROKERS is not set and ${noContainer}` };

  const kafkaProject =
    kafka.source === "none"
      ? { runs: false, reason: `${kafka.reason}; npm run kafka:up starts a broker` }
      : postgres.source === "pglite"
        ? { runs: false, reason: `${postgres.reason}; the Kafka suites run their services as separate processes on PostgreSQL` }
        : { runs: true, reason: `PostgreSQL from ${postgres.source}, Kafka from ${kafka.source}` };

  const refusal =
    env.CI === "true" && !kafkaProject.runs
      ? `CI runs the Kafka suites, but ${kafkaProject.reason}. Start a broker (npm run kafka:up) and set KAFKA_BROKERS and TEST_DATABASE_URL (.ci/run does both).`
      : undefined;

  return { postgres, kafka, kafkaProject, ...(refusal ? { refusal } : {}) };
}

/** What vitest.config.ts calls: Docker is asked only when its answer can change the plan. */
export async function decideTestServices(
  env: TestServicesEnv & NodeJS.ProcessEnv,
  probe: (env: NodeJS.ProcessEnv) => Promise<DockerStatus> = probeDocker,
): Promise<TestServicesPlan> {
  const docker = dockerWanted(env) ? await probe(env) : { answers: false, detail: "not asked" };
  return planTestServices(env, docker);
}

/** True when the plan has something for test-containers.ts to start. */
export function needsContainers(plan: TestServicesPlan): boolean {
  return plan.postgres.source === "container" || plan.kafka.source === "container";
}

function containersTurnedOff(env: TestServicesEnv): boolean {
  return /^(off|0|false|no)$/i.test((env.ORVADO_TEST_CONTAINERS ?? "").trim());
}

function given(value: string | undefined): boolean {
  return (value ?? "").trim() !== "";
}
