import type { Db } from "@orvado/db";

/** The same Db, counting the statements sent through query (to see calls shared, or not). */
export function countingStatements(inner: Db): { db: Db; statements: () => number } {
  let count = 0;
  const db: Db = {
    ...inner,
    query: (sql, params, options) => {
      count += 1;
      return inner.query(sql, params, options);
    },
  };
  return { db, statements: () => count };
}
