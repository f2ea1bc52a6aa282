import { existsSync, readFileSync } from "node:fs";

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, but someone else's.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The last lines of a log file, for an error message. */
export function readLogTail(file: string, lines = 40): string {
  if (!existsSync(file)) return "(no log was written)";
  return readFileSync(file, "utf8").split("\n").slice(-lines - 1).join("\n");
}
