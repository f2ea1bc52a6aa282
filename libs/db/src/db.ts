// The database port every service uses: plain SQL with parameters, transactions,
// and notifications; node-postgres against a server, PGlite when embedded.

export type Row = Record<string, unknown>;

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  query<R = Row>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: "pg" | "pglite";
  /** Runs fn inside BEGIN/COMMIT; a throw rolls back. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** Calls onPayload for each NOTIFY on channel until the returned function is called. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export const INT8_OID = 20;

/** int8 columns (money, offsets, counts) become bigint, never a lossy number. */
export const parseInt8 = (text: string): bigint => BigInt(text);
