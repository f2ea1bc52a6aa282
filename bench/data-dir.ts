import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A fresh directory for the images of one benchmarked Orvado, under the
 * checkout's `data/` as `npm start` keeps them (or under BENCH_DATA_DIR), not
 * under the system's temp directory: on this machine creating a file under /tmp
 * costs several times what it costs under the checkout, same disk and file
 * system (docs/performance.md#the-machine), which measured /tmp, not Orvado.
 */
export function benchDataDir(prefix: string): string {
  const root = process.env.BENCH_DATA_DIR ?? fileURLToPath(new URL("../data/bench/", import.meta.url));
  mkdirSync(root, { recursive: true });
  return mkdtempSync(join(root, prefix));
}
