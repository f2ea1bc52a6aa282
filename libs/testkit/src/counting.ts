import type { Db } from "@orvado/db";

/** The same Db, counting the statements sent through query (to see calls shared, or not) and keeping their text. */
export function countingStatements(inner: Db): { db: Db; statements: () => number; texts: () => string[] } {
  const sent: string[] = [];
  const db: Db = {
    ...inner,
    query: (sql, params, options) => {
      sent.push(sql);
      return inner.query(sql, params, options);
    },
  };
  return { db, statements: () => sent.length, texts: () => [...sent] };
}
