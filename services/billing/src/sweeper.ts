import type { Db } from "@orvado/db";
import type { Logger } from "@orvado/core";
import { settle } from "./settle.ts";

/** Releases holds nobody settled in time (a crashed job), so nothing stays held forever. */
export async function releaseExpiredHolds(db: Db, logger: Logger, batch = 200): Promise<number> {
  const due = await db.query<{ request_id: string }>(
    `SELECT request_id FROM billing.cost_records WHERE settled_by IS NULL AND hold_expires_at < now()
     ORDER BY hold_expires_at LIMIT $1`,
    [batch],
  );
  let released = 0;
  for (const row of due.rows) {
    if ((await settle(db, row.request_id, { kind: "expired" })) === "applied") released += 1;
  }
  if (released > 0) logger.warn({ released }, "released expired holds");
  return released;
}

export function startHoldSweeper(db: Db, logger: Logger, intervalMs: number): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = releaseExpiredHolds(db, logger).catch((error: unknown) => logger.error({ err: error }, "hold sweep failed"));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
