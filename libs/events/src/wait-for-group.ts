import type { Db } from "@orvado/db";

/**
 * On the Postgres log: resolves once `group` has committed everything that was
 * in `topic` when called (graceful shutdown, tests). Rejects after timeoutMs.
 */
export async function waitForGroup(
  db: Db,
  topic: string,
  group: string,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 20;
  const end = await db.query<{ end_offset: bigint }>(
    `SELECT COALESCE(max("offset"), 0) AS end_offset FROM stream.messages WHERE topic = $1`,
    [topic],
  );
  const target = BigInt(end.rows[0]?.end_offset ?? 0n);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const committed = await db.query<{ committed_offset: bigint }>(
      `SELECT committed_offset FROM stream.consumer_offsets WHERE "group" = $1 AND topic = $2`,
      [group, topic],
    );
    const offset = BigInt(committed.rows[0]?.committed_offset ?? 0n);
    if (offset >= target) return;
    if (Date.now() >= deadline) {
      throw new Error(`group ${group} is still at offset ${offset} of ${target} on ${topic} after ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
