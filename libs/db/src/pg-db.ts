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
  // A few connections whose every commit skips the WAL-flush wait, so that a
  // single non-durable statement is one round trip, not BEGIN + SET + it + COMMIT.
  let relaxedPool: pg.Pool | null = null;
  let relaxedRoot: Queryable | null = null;
  function relaxed(): Queryable {
    if (!relaxedRoot) {
      relaxedPool = new pg.Pool({ connectionString: url, max: Math.min(RELAXED_POOL_MAX, maxConnections), types, options: "-c synchronous_commit=off" });
      relaxedPool.on("error", () => {});
      relaxedRoot = wrap(relaxedPool);
    }
    return relaxedRoot;
  }
  let listener: pg.Client | null = null;
  const handlers = new Map<string, Set<(payload: string) => void>>();

  let closed = false;

  async function listenerClient(): Promise<pg.Client> {
    if (listener) return listener;
    const client = new pg.Client({ connectionString: url, types });
    client.on("error", () => {
      // A lost listening connection (server restart, terminated backend) is
      // re-made with its channels; consumers poll meanwhile, so nothing is missed.
      if (listener === client) listener = null;
      client.end().catch(() => {});
      if (!closed) setTimeout(() => void relisten(), 500).unref();
    });
    client.on("notification", (message) => {
      for (const handler of handlers.get(message.channel) ?? []) handler(message.payload ?? "");
    });
    await client.connect();
    listener = client;
    return client;
  }

  async function relisten(): Promise<void> {
    if (closed || listener || handlers.size === 0) return;
    try {
      const client = await listenerClient();
      for (const channel of handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch {
      if (!closed) setTimeout(() => void relisten(), 1000).unref();
    }
  }

  return {
    kind: "pg",
    query: <R = Row>(sql: string, params?: unknown[], options?: TxOptions) => (options?.durable === false ? relaxed() : root).query<R>(sql, params),
    exec: root.exec,
    async tx(fn, options) {
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
    },
    async listen(channel, onPayload) {
      const client = await listenerClient();
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      }
      set.add(onPayload);
      return async () => {
        set.delete(onPayload);
      };
    },
    async close() {
      closed = true;
      await listener?.end().catch(() => {});
      await Promise.all([pool.end(), relaxedPool?.end()]);
    },
  };
}
