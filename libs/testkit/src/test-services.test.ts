import { describe, expect, it } from "vitest";
import type { DockerStatus } from "./docker-probe.ts";
import { decideTestServices, dockerWanted, needsContainers, planTestServices, type KafkaSource, type PostgresSource } from "./test-services.ts";

// The choice of where a test run's PostgreSQL and Kafka come from: a pure
// function of the environment and of whether Docker answers (no transport; the
// probe itself is tested over a Unix socket in docker-probe.test.ts).

const DOCKER: DockerStatus = { answers: true, detail: "unix:///var/run/docker.sock answered /_ping" };
const NO_DOCKER: DockerStatus = { answers: false, detail: "unix:///var/run/docker.sock: connect ENOENT" };
const DB = "postgres://postgres@127.0.0.1:5432/postgres";
const BROKERS = "127.0.0.1:9092";

// Every combination of the three inputs that decide, with what must come out.
const TABLE: {
  db: boolean;
  brokers: boolean;
  docker: boolean;
  postgres: PostgresSource;
  kafka: KafkaSource;
  kafkaProject: boolean;
}[] = [
  { db: true, brokers: true, docker: true, postgres: "env", kafka: "env", kafkaProject: true },
  { db: true, brokers: true, docker: false, postgres: "env", kafka: "env", kafkaProject: true },
  { db: true, brokers: false, docker: true, postgres: "env", kafka: "container", kafkaProject: true },
  { db: true, brokers: false, docker: false, postgres: "env", kafka: "none", kafkaProject: false },
  { db: false, brokers: true, docker: true, postgres: "container", kafka: "env", kafkaProject: true },
  { db: false, brokers: true, docker: false, postgres: "pglite", kafka: "env", kafkaProject: false },
  { db: false, brokers: false, docker: true, postgres: "container", kafka: "container", kafkaProject: true },
  { db: false, brokers: false, docker: false, postgres: "pglite", kafka: "none", kafkaProject: false },
];

const envOf = (row: { db: boolean; brokers: boolean }) => ({
  ...(row.db ? { TEST_DATABASE_URL: DB } : {}),
  ...(row.brokers ? { KAFKA_BROKERS: BROKERS } : {}),
});

describe("planTestServices: sources for every combination of TEST_DATABASE_URL, KAFKA_BROKERS and Docker", () => {
  for (const row of TABLE) {
    const name = `TEST_DATABASE_URL ${row.db ? "set" : "unset"}, KAFKA_BROKERS ${row.brokers ? "set" : "unset"}, Docker ${row.docker ? "answers" : "silent"}`;

    it(`${name} → PostgreSQL ${row.postgres}, Kafka ${row.kafka}, kafka project ${row.kafkaProject ? "runs" : "skipped"}`, () => {
      const plan = planTestServices(envOf(row), row.docker ? DOCKER : NO_DOCKER);
      expect(plan.postgres.source).toBe(row.postgres);
      expect(plan.kafka.source).toBe(row.kafka);
      expect(plan.kafkaProject.runs).toBe(row.kafkaProject);
      expect(needsContainers(plan)).toBe(row.postgres === "container" || row.kafka === "container");
      expect(plan.refusal).toBeUndefined();
    });

    it(`${name}, CI=true → ${row.kafkaProject ? "runs" : "refuses to start"}`, () => {
      const plan = planTestServices({ ...envOf(row), CI: "true" }, row.docker ? DOCKER : NO_DOCKER);
      expect(plan.postgres.source).toBe(row.postgres);
      expect(plan.kafka.source).toBe(row.kafka);
      if (row.kafkaProject) expect(plan.refusal).toBeUndefined();
      else expect(plan.refusal).toMatch(/^CI runs the Kafka suites, but .*npm run kafka:up.*KAFKA_BROKERS and TEST_DATABASE_URL/);
    });

    it(`${name}, ORVADO_TEST_CONTAINERS=off → no container: as without Docker`, () => {
      const plan = planTestServices({ ...envOf(row), ORVADO_TEST_CONTAINERS: "off" }, row.docker ? DOCKER : NO_DOCKER);
      const withoutDocker = TABLE.find((other) => other.db === row.db && other.brokers === row.brokers && !other.docker)!;
      expect(plan.postgres.source).toBe(withoutDocker.postgres);
      expect(plan.kafka.source).toBe(withoutDocker.kafka);
      expect(plan.kafkaProject.runs).toBe(withoutDocker.kafkaProject);
      expect(needsContainers(plan)).toBe(false);
    });
  }
});

describe("planTestServices: reasons and edge values", () => {
  it("says which variable is missing and why the kafka project is skipped, as the run prints it", () => {
    const noBroker = planTestServices({ TEST_DATABASE_URL: DB }, NO_DOCKER);
    expect(noBroker.kafka.reason).toBe("KAFKA_BROKERS is not set and no Docker engine answers (unix:///var/run/docker.sock: connect ENOENT)");
    expect(noBroker.kafkaProject.reason).toContain("npm run kafka:up starts a broker");

    const noDatabase = planTestServices({ KAFKA_BROKERS: BROKERS }, NO_DOCKER);
    expect(noDatabase.postgres.reason).toMatch(/^TEST_DATABASE_URL is not set and no Docker engine answers/);
    expect(noDatabase.kafkaProject.reason).toContain("separate processes on PostgreSQL");
  });

  it("names the Docker endpoint that answered when it picks a container", () => {
    const plan = planTestServices({}, DOCKER);
    expect(plan.postgres.reason).toContain("unix:///var/run/docker.sock answered /_ping");
    expect(plan.kafka.reason).toContain("unix:///var/run/docker.sock answered /_ping");
    expect(plan.kafkaProject.reason).toBe("PostgreSQL from container, Kafka from container");
  });

  it("says containers are turned off rather than blaming Docker", () => {
    const plan = planTestServices({ ORVADO_TEST_CONTAINERS: "off" }, DOCKER);
    expect(plan.postgres.reason).toContain("containers are turned off (ORVADO_TEST_CONTAINERS)");
  });

  it("takes empty or blank values as unset (KAFKA_BROKERS='' is not a broker list)", () => {
    const plan = planTestServices({ TEST_DATABASE_URL: " ", KAFKA_BROKERS: "" }, DOCKER);
    expect(plan.postgres.source).toBe("container");
    expect(plan.kafka.source).toBe("container");
  });

  it("accepts off, 0, false and no (any case) to turn containers off; other values leave them on", () => {
    for (const value of ["off", "OFF", "0", "false", "No", " off "]) {
      expect(planTestServices({ ORVADO_TEST_CONTAINERS: value }, DOCKER).postgres.source).toBe("pglite");
    }
    for (const value of ["", "on", "1", "auto"]) {
      expect(planTestServices({ ORVADO_TEST_CONTAINERS: value }, DOCKER).postgres.source).toBe("container");
    }
  });

  it("only CI=true refuses; other CI values are a developer's run", () => {
    expect(planTestServices({ CI: "1" }, NO_DOCKER).refusal).toBeUndefined();
    expect(planTestServices({ CI: "true" }, NO_DOCKER).refusal).toBeDefined();
  });
});

describe("decideTestServices: asks Docker only when the answer matters", () => {
  const answering = (calls: NodeJS.ProcessEnv[]) => async (env: NodeJS.ProcessEnv) => {
    calls.push(env);
    return DOCKER;
  };

  it("both variables set: Docker is not asked and the plan uses them", async () => {
    const calls: NodeJS.ProcessEnv[] = [];
    const plan = await decideTestServices({ TEST_DATABASE_URL: DB, KAFKA_BROKERS: BROKERS }, answering(calls));
    expect(calls).toHaveLength(0);
    expect([plan.postgres.source, plan.kafka.source]).toEqual(["env", "env"]);
    expect(dockerWanted({ TEST_DATABASE_URL: DB, KAFKA_BROKERS: BROKERS })).toBe(false);
  });

  it("containers turned off: Docker is not asked", async () => {
    const calls: NodeJS.ProcessEnv[] = [];
    const plan = await decideTestServices({ ORVADO_TEST_CONTAINERS: "off" }, answering(calls));
    expect(calls).toHaveLength(0);
    expect([plan.postgres.source, plan.kafka.source]).toEqual(["pglite", "none"]);
  });

  it("one variable unset: Docker is asked once, with the run's environment, and its answer is used", async () => {
    const calls: NodeJS.ProcessEnv[] = [];
    const env = { TEST_DATABASE_URL: DB, DOCKER_HOST: "unix:///tmp/some.sock" };
    const plan = await decideTestServices(env, answering(calls));
    expect(calls).toEqual([env]);
    expect([plan.postgres.source, plan.kafka.source]).toEqual(["env", "container"]);
  });
});
