import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

// `npm start` (and start:cluster) leave the addresses the services chose in
// <data dir>/addresses.json while they run, so `npx orvado` in another shell finds them
// without flags; the file is removed on shutdown, and one left by a process that died
// is stale (its pid no longer runs) and ignored. It holds addresses only: the CLI still
// authenticates with the internal secret from secrets.json (mode 0600) or the environment.

export const ADDRESSES_FILE_NAME = "addresses.json";

const urls = z.array(z.string().url()).min(1);
const addressesSchema = z.object({
  pid: z.number().int().positive(),
  startedAt: z.string(),
  edge: z.string().url(),
  auth: urls,
  billing: urls,
  generation: urls,
});

export type ServiceAddresses = z.infer<typeof addressesSchema>;

/** Writes the file (replacing any earlier one at once) and answers a function that removes it if it is still this process's. */
export function writeAddressesFile(dataDir: string, addresses: Omit<ServiceAddresses, "pid" | "startedAt">): () => void {
  const path = join(dataDir, ADDRESSES_FILE_NAME);
  const written: ServiceAddresses = { pid: process.pid, startedAt: new Date().toISOString(), ...addresses };
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(written, null, 2)}\n`, { mode: 0o644 });
  renameSync(temporary, path);
  return () => {
    // A later start on the same data dir owns the file now: leave its addresses.
    if (readAddressesFile(dataDir).addresses?.pid === process.pid) rmSync(path, { force: true });
  };
}

export type AddressesRead =
  | { addresses: ServiceAddresses; problem?: undefined }
  | { addresses?: undefined; problem: "missing" | "stale" | "unreadable"; path: string };

/** The addresses of the stack running on this data dir, or why there are none. */
export function readAddressesFile(dataDir: string): AddressesRead {
  const path = join(dataDir, ADDRESSES_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return { problem: (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "unreadable", path };
  }
  let parsed: ReturnType<typeof addressesSchema.safeParse>;
  try {
    parsed = addressesSchema.safeParse(JSON.parse(text));
  } catch {
    return { problem: "unreadable", path };
  }
  if (!parsed.success) return { problem: "unreadable", path };
  return isRunning(parsed.data.pid) ? { addresses: parsed.data } : { problem: "stale", path };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
