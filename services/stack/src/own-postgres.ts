import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./process-stack.ts";

// A PostgreSQL server of a test's own, for a test that restarts it: the machine's
// shared server at 5432 serves other test files at the same time, so it is never
// restarted. initdb refuses to run as root, so as root (CI) the server runs as the
// `postgres` OS user, in a temporary directory handed to that user.

const run = promisify(execFile);

export interface OwnPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust auth). */
  readonly url: string;
  /** pg_ctl restart -m fast: every connection is cut and the server comes back on the same port. */
  restart(): Promise<void>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

/** Where Debian puts a server's programs: /usr/lib/postgresql/<newest version>/bin. */
function serverBin(): string {
  const versions = readdirSync("/usr/lib/postgresql").filter((name) => /^\d+$/.test(name));
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error("no PostgreSQL server under /usr/lib/postgresql");
  return join("/usr/lib/postgresql", newest, "bin");
}

/** Runs a server program, as the postgres OS user when this process is root. */
async function asServerUser(program: string, args: string[]): Promise<void> {
  const asRoot = userInfo().uid === 0;
  const [command, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", program, ...args]] : [program, args];
  await run(command, argv, { timeout: 120_000 });
}

/** uid and gid of the postgres OS user (id -u / id -g). */
async function serverUserIds(): Promise<{ uid: number; gid: number }> {
  const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
  const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
  return { uid, gid };
}

/** initdb in a temporary directory, then a server on a free port with its socket in that directory. */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = serverBin();
  const dir = mkdtempSync(join(tmpdir(), "orvado-own-pg-"));
  if (userInfo().uid === 0) {
    const { uid, gid } = await serverUserIds();
    chownSync(dir, uid, gid);
  }
  const dataDir = join(dir, "data");
  const port = await freePort();
  await asServerUser(join(bin, "initdb"), ["-D", dataDir, "-U", "postgres", "-A", "trust", "--no-sync"]);
  // Eight service processes and the test each keep a pool; the shared server allows as many.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off`;
  const pgCtl = (...args: string[]) => asServerUser(join(bin, "pg_ctl"), ["-D", dataDir, "-l", join(dir, "server.log"), "-w", "-t", "120", ...args]);
  await pgCtl("-o", options, "start");
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => pgCtl("-m", "fast", "-o", options, "restart"),
    async stop() {
      await pgCtl("-m", "fast", "stop").catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
