import type { Logger } from "pino";

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Keeps a started service up until SIGINT/SIGTERM, then stops it once (letting
 * work in flight finish) and exits; a second signal exits at once.
 */
export function stopOnSignal(service: Stoppable, logger: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    logger.info({ signal }, "stopping: finishing work in flight");
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

/**
 * A service run as its own process shares its data with the other services, so
 * it needs PostgreSQL: PGlite (the embedded default of `npm start`) admits one
 * process. Exits with a clear message instead of starting on a private database.
 */
export function requireSharedDatabase(service: string, databaseUrl: string): void {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return;
  process.stderr.write(
    `${service}: DATABASE_URL must be a postgres:// address when the service runs as its own process ` +
      `(got ${JSON.stringify(databaseUrl)}). For the embedded single-process set, run \`npm start\`.\n`,
  );
  process.exit(2);
}
