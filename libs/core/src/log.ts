import { pino, type Logger } from "pino";

export type { Logger };

// Keys, passwords and secrets never reach a log line, whatever object is logged.
const REDACT = [
  "secret",
  "password",
  "authorization",
  "*.secret",
  "*.password",
  "*.authorization",
  "headers.authorization",
  "req.headers.authorization",
];

// Lines go to standard output in batches of about 4 kB, not one write each: pino's
// default writes every line through the thread pool, two per image request (the
// request and its job), and each such write wakes a thread and then the event loop.
// A line waits at most FLUSH_MS; pino writes what is left when the process exits
// (its exit handler), so only a process killed outright (SIGKILL, the OOM killer)
// loses up to its last FLUSH_MS of lines.
// Each batch is written synchronously, as Node writes its own standard output to a
// pipe on Linux: a batch written through the thread pool could still be in flight
// when process.exit ran the exit handler, and was then lost while the lines after it
// were written (log.test.ts caught it; docs/design-choices.md#log-lines-in-batches-written-synchronously).
// pino flushes only an asynchronous destination at exit, so this one flushes its own last batch.
const BATCH_BYTES = 4096;
const FLUSH_MS = 200;
let stdout: ReturnType<typeof pino.destination> | undefined;

/** One buffered destination per process, shared by every logger. */
function standardOutput() {
  if (!stdout) {
    const destination = pino.destination({ dest: 1, sync: true, minLength: BATCH_BYTES, periodicFlush: FLUSH_MS });
    // 'exit' comes after process.exit() and after an uncaught exception alike; only writes that finish now count.
    process.once("exit", () => {
      try {
        destination.flushSync();
      } catch {
        // Standard output is gone (its reader closed the pipe): nothing more can be written.
      }
    });
    stdout = destination;
  }
  return stdout;
}

/**
 * Writes the lines still batched now. For text a process writes to standard output itself
 * that refers to lines logged before it (npm start's banner points at the log "above").
 */
export function flushLogs(): void {
  stdout?.flushSync();
}

export function createLogger(service: string, level = "info"): Logger {
  return pino({ name: service, level, redact: { paths: REDACT, censor: "[redacted]" } }, standardOutput());
}
