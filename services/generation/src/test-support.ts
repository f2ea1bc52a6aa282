import { fileURLToPath } from "node:url";
import { migrate, openDb, type Db } from "@orvado/db";
import { migrateOutbox } from "@orvado/events";
import { freshDatabase } from "@orvado/testkit";

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
