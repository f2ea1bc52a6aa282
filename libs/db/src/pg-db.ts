import pg from "pg";
import type { Db, QueryResult, Queryable, Row, TxOptions } from "./db.ts";
import { INT8_OID, parseInt8 } from "./db.ts";

const types = {
  getTypeParser: (oid: number, format?: "text" | "binary") =>
    oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as "text"),
};

const PREPARED = new Map<string, string>();

/** Marks a statement as hot: it is prepared once per connection and reused (see wrap). */
export function prepareStatement(sql: string): string {
  if (!PREPARED.has(sql)) PREPARED.set(sql, `orvado_${PREPARED.size + 1}`);
  return sql;
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<R = Row>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
      // Hot statements are prepared once per connection (named by their text), so
      // PostgreSQL parses and plans them once, not on every call.
      const name = PREPARED.has(sql) ? PREPARED.get(sql) : undefined;
      const result = name ? await client.query({ name, text: sql, values: params as unknown[] }) : await client.query(sql, params as unknown[]);
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await client.query(sql);
    },
  };
}

/** Connections for single statements whose commit need not wait for the disk (query's durable: false). */
const RELAXED_POOL_MAX = 3;

export function openPgDb(url: string, maxConnections = 20): Db {
  const pool = new pg.Pool({ connectionString: url, max: maxConnections, types });
  // An idle client losing its server is reported here; without a handler it would crash the process.
  pool.on("error", () => {});
  const root = wrap(pool);
  const relaxed = new RelaxedPool(url, Math.min(RELAXED_POOL_MAX, maxConnections));
  const listener = new Listener(url);
  return {
    kind: "pg",
    query: <R = Row>(sql: string, params?: unknown[], options?: TxOptions) => (options?.durable === false ? relaxed.root() : root).query<R>(sql, params),
    exec: root.exec,
    tx: (fn, options) => inTransaction(pool, fn, options),
    listen: (channel, onPayload) => listener.listen(channel, onPayload),
    async close() {
      await listener.close();
      await Promise.all([pool.end(), relaxed.end()]);
    },
  };
}

/**
 * A few connections whose every commit skips the WAL-flush wait, opened on first
 * use, so that a single non-durable statement is one round trip, not BEGIN + SET + it + COMMIT.
 */
class RelaxedPool {
  private pool: pg.Pool | null = null;
  private queryable: Queryable | null = null;

  constructor(
    private readonly url: string,
    private readonly max: number,
  ) {}

  root(): Queryable {
    if (!this.queryable) {
      this.pool = new pg.Pool({ connectionString: this.url, max: this.max, types, options: "-c synchronous_commit=off" });
      this.pool.on("error", () => {});
      this.queryable = wrap(this.pool);
    }
    return this.queryable;
  }

  async end(): Promise<void> {
    await this.pool?.end();
  }
}

async function inTransaction<T>(pool: pg.Pool, fn: (q: Queryable) => Promise<T>, options?: TxOptions): Promise<T> {
  const client = await pool.connect();
  // The pool stops listening for errors on a client it has lent out; a
  // backend terminated mid-transaction must fail this call, not crash the process.
  const onError = () => {};
  client.on("error", onError);
  let broken: Error | undefined;
  try {
    // One round trip either way: the simple protocol takes both statements at once.
    await client.query(options?.durable === false ? "BEGIN; SET LOCAL synchronous_commit TO OFF" : "BEGIN");
    const result = await fn(wrap(client));
    await client.query("COMMIT");
    return result;
  } catch (error) {
    // If even ROLLBACK fails the connection is gone: hand it back as broken so the pool drops it.
    await client.query("ROLLBACK").catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

/** One connection, opened on first use, that LISTENs on every channel a caller asked for. */
class Listener {
  private client: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;

  constructor(private readonly url: string) {}

  async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
    const client = await this.connected();
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    }
    set.add(onPayload);
    return async () => {
      set.delete(onPayload);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client?.end().catch(() => {});
  }

  private async connected(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client({ connectionString: this.url, types });
    client.on("error", () => {
      // A lost listening connection (server restart, terminated backend) is
      // re-made with its channels; consumers poll meanwhile, so nothing is missed.
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      if (!this.closed) setTimeout(() => void this.relisten(), 500).unref();
    });
    client.on("notification", (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? "");
    });
    await client.connect();
    this.client = client;
    return client;
  }

  private async relisten(): Promise<void> {
    if (this.closed || this.client || this.handlers.size === 0) return;
    try {
      const client = await this.connected();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch {
      if (!this.closed) setTimeout(() => void this.relisten(), 1000).unref();
    }
  }
}
