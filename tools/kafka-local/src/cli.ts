// npm run kafka:up / kafka:down: one local broker for development and CI.
import { resolve } from "node:path";
import { z } from "zod";
import { BrokerError, DEFAULT_KAFKA_PORT, DEFAULT_START_TIMEOUT_MS, SMALLEST_HEAP_MB, runningBrokerPid, startLocalBroker, stopLocalBroker } from "./broker.ts";

const Env = z.object({
  KAFKA_PORT: z.coerce.number().int().min(1).max(65_534).default(DEFAULT_KAFKA_PORT),
  /** The KRaft controller's port; KAFKA_PORT+1 when not given. */
  KAFKA_CONTROLLER_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  KAFKA_DATA_DIR: z.string().min(1).optional(),
  ORVADO_DATA_DIR: z.string().min(1).default("./data"),
  KAFKA_START_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(DEFAULT_START_TIMEOUT_MS),
  KAFKA_HEAP_MB: z.coerce.number().int().min(SMALLEST_HEAP_MB).default(1024),
});

async function main(command: string | undefined): Promise<number> {
  const parsed = Env.safeParse(process.env);
  if (!parsed.success) {
    process.stderr.write(`kafka: ${parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ")}\n`);
    return 2;
  }
  const env = parsed.data;
  const dataDir = resolve(env.KAFKA_DATA_DIR ?? `${env.ORVADO_DATA_DIR}/kafka`);
  if (command === "up") {
    if (runningBrokerPid(dataDir) !== undefined) {
      process.stderr.write(`kafka: a broker is already running on ${dataDir} (pid ${runningBrokerPid(dataDir)})\n`);
    } else {
      const broker = await startLocalBroker({
        dataDir,
        port: env.KAFKA_PORT,
        controllerPort: env.KAFKA_CONTROLLER_PORT,
        startTimeoutMs: env.KAFKA_START_TIMEOUT_MS,
        heapMb: env.KAFKA_HEAP_MB,
        detached: true,
      });
      process.stderr.write(`kafka: broker up (pid ${broker.pid}), store and log in ${dataDir}; stop it with npm run kafka:down\n`);
    }
    process.stdout.write(`KAFKA_BROKERS=127.0.0.1:${env.KAFKA_PORT}\n`);
    return 0;
  }
  if (command === "down") {
    const stopped = await stopLocalBroker(dataDir);
    process.stderr.write(stopped ? `kafka: broker on ${dataDir} stopped\n` : `kafka: no broker was running on ${dataDir}\n`);
    return 0;
  }
  process.stderr.write("usage: kafka up | kafka down   (npm run kafka:up, npm run kafka:down)\n");
  return 2;
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`kafka: ${error instanceof BrokerError ? error.message : String((error as Error)?.stack ?? error)}\n`);
    process.exit(1);
  },
);
