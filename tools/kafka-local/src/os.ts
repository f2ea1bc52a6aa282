import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";

export async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  // Not events.once: it rejects on "error", which here is an answer (the port is taken).
  const ok = await new Promise<boolean>((resolve) => {
    server.once("listening", () => resolve(true));
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1");
  });
  if (ok) {
    server.close();
    await once(server, "close");
  }
  return ok;
}

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
