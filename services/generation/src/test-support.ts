import { fileURLToPath } from "node:url";
import { migrate, openDb, type Db } from "@orvado/db";
import { migrateOutbox } from "@orvado/events";
import { freshDatabase } from "@orvado/testkit";
import { parseCatalog, type Catalog } from "./catalog.ts";

/** A fresh database with generation's schema and outbox, for tests; close() drops it. */
export async function openGenerationTestDb(): Promise<{ db: Db; url: string; close(): Promise<void> }> {
  const database = await freshDatabase();
  const db = await openDb(database.url);
  await migrate(db, "generation", fileURLToPath(new URL("../migrations", import.meta.url)), fileURLToPath(new URL("../sql/functions", import.meta.url)));
  await migrateOutbox(db, "generation");
  return {
    db,
    url: database.url,
    async close() {
      await db.close();
      await database.drop();
    },
  };
}

/**
 * A catalog for tests of channels: alpha-2.5-flare on two upstream channels (main: openai,
 * capacity 2; backup: openai-compatible, capacity 1) and beta on the sandbox (capacity 1).
 */
export function twoChannelCatalog(): Catalog {
  return parseCatalog({
    models: [
      {
        id: "alpha-2.5-flare",
        family: "alpha",
        tiers: ["1K"],
        channels: [
          { name: "main", provider: "openai", upstreamModel: "m", apiKeyEnv: "K", capacity: 2, priority: 1 },
          { name: "backup", provider: "openai-compatible", upstreamModel: "m", baseUrl: "http://127.0.0.1:1/v1", capacity: 1, priority: 2 },
        ],
      },
      { id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "sandbox", provider: "sandbox", capacity: 1 }] },
    ],
  });
}
