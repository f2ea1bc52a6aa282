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
  /**
   * One statement in its own transaction. With `durable: false` its commit does
   * not wait for the WAL flush (the same rule as tx's option), in one round trip
   * where a tx would take three (BEGIN, the statement, COMMIT).
   */
  query<R = Row>(sql: string, params?: unknown[], options?: TxOptions): Promise<QueryResult<R>>;
  /**
   * Runs fn inside BEGIN/COMMIT; a throw rolls back. With `durable: false` the
   * commit does not wait for its WAL flush (synchronous_commit off for this
   * transaction only): a crash of the database server may lose it, never
   * reorder it. Only for writes that are safe to lose or redo (docs/architecture.md,
   * "What waits for the disk"); money never uses it.
   */
  tx<T>(fn: (q: Queryable) => Promise<T>, options?: TxOptions): Promise<T>;
  /** Calls onPayload for each NOTIFY on channel until the returned function is called. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface TxOptions {
  /** Default true: the commit returns once it is on disk. */
  durable?: boolean;
}

export const INT8_OID = 20;

/** int8 columns (money, offsets, counts) become bigint, never a lossy number. */
export const parseInt8 = (text: string): bigint => BigInt(text);
