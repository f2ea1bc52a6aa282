import { PGlite, type Transaction } from "@electric-sql/pglite";
import type { Db, QueryResult, Queryable, Row } from "./db.ts";
import { INT8_OID, parseInt8 } from "./db.ts";

function wrap(target: PGlite | Transaction): Queryable {
  return {
    async query<R = Row>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
      const result = await target.query<R>(sql, params as unknown[]);
      // PGlite reports affectedRows 0 for SELECT; take whichever count is real.
      return { rows: result.rows, rowCount: Math.max(result.affectedRows ?? 0, result.rows.length) };
    },
    async exec(sql: string) {
      await target.exec(sql);
    },
  };
}

/** dataDir undefined means in memory. PGlite serialises transactions itself. */
export async function openPgliteDb(dataDir?: string): Promise<Db> {
  const db = await PGlite.create({ dataDir, parsers: { [INT8_OID]: parseInt8 } });
  const root = wrap(db);
  return {
    kind: "pglite",
    // PGlite is embedded: a commit's durability is its own (see tx below).
    query: <R = Row>(sql: string, params?: unknown[]) => root.query<R>(sql, params),
    exec: root.exec,
    // PGlite is embedded (one process, its own files): every commit is treated alike.
    tx: (fn) => db.transaction((tx) => fn(wrap(tx))),
    async listen(channel, onPayload) {
      const unlisten = await db.listen(channel, onPayload);
      return () => unlisten();
    },
    close: () => db.close(),
  };
}
