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

export function createLogger(service: string, level = "info"): Logger {
  return pino({ name: service, level, redact: { paths: REDACT, censor: "[redacted]" } });
}
