// migrate(): migrations once each with their checksum, refused when edited after
// they ran; function files re-applied at every start, and functions no file
// defines dropped. On PostgreSQL when TEST_DATABASE_URL is set, else PGlite.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@orvado/testkit";
import { functionDefinitions, migrate, openDb, type Db } from "./index.ts";

const TABLE = "CREATE TABLE m.items (id INT PRIMARY KEY, label TEXT NOT NULL);\n";
const SEED = "INSERT INTO m.items VALUES (1, 'one');\n";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

let database: FreshDatabase;
let db: Db;
let root: string;
let migrations: string;
let functions: string;

beforeEach(async () => {
  database = await freshDatabase();
  db = await openDb(database.url);
  root = await mkdtemp(join(tmpdir(), "orvado-migrate-"));
  migrations = join(root, "migrations");
  functions = join(root, "functions");
  await Promise.all([mkdir(migrations), mkdir(functions)]);
  await writeFile(join(migrations, "001_items.sql"), TABLE);
  await writeFile(join(migrations, "002_seed.sql"), SEED);
});

afterEach(async () => {
  await db.close();
  await database.drop();
  await rm(root, { recursive: true, force: true });
});

const recorded = async () =>
  (await db.query<{ name: string; sha256: string }>("SELECT name, sha256 FROM m.schema_migrations ORDER BY name")).rows;

describe("migration checksums", () => {
  it("records each applied migration's sha256", async () => {
    expect(await migrate(db, "m", migrations)).toEqual(["001_items.sql", "002_seed.sql"]);
    expect(await recorded()).toEqual([
      { name: "001_items.sql", sha256: sha256(TABLE) },
      { name: "002_seed.sql", sha256: sha256(SEED) },
    ]);
    expect(await migrate(db, "m", migrations)).toEqual([]);
  });

  it("refuses to start, naming the file, when an applied migration was edited; a new migration does not run", async () => {
    await migrate(db, "m", migrations);
    await writeFile(join(migrations, "002_seed.sql"), "INSERT INTO m.items VALUES (1, 'uno');\n");
    await writeFile(join(migrations, "003_more.sql"), "INSERT INTO m.items VALUES (3, 'three');\n");
    await expect(migrate(db, "m", migrations)).rejects.toThrow(/migration .*002_seed\.sql was edited after it was applied to schema m/);
    expect((await db.query("SELECT id FROM m.items ORDER BY id")).rows).toEqual([{ id: 1 }]);
    expect((await recorded()).map((row) => row.name)).toEqual(["001_items.sql", "002_seed.sql"]);
  });

  it("gives rows from before checksums the current file's, then holds the file to it", async () => {
    // The table as migrate() made it before checksums were recorded.
    await db.exec(`CREATE SCHEMA m; ${TABLE} ${SEED}
      CREATE TABLE m.schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
      INSERT INTO m.schema_migrations (name) VALUES ('001_items.sql'), ('002_seed.sql');`);
    expect(await migrate(db, "m", migrations)).toEqual([]);
    expect(await recorded()).toEqual([
      { name: "001_items.sql", sha256: sha256(TABLE) },
      { name: "002_seed.sql", sha256: sha256(SEED) },
    ]);
    await writeFile(join(migrations, "001_items.sql"), TABLE + "-- a comment is an edit too\n");
    await expect(migrate(db, "m", migrations)).rejects.toThrow(/001_items\.sql was edited/);
  });
});

describe("function files", () => {
  const label = (body: string) =>
    `CREATE OR REPLACE FUNCTION m.label(p_id INT) RETURNS TEXT LANGUAGE sql AS $$ ${body} $$;\n`;
  const call = async (sql: string) => (await db.query<{ v: string }>(`SELECT ${sql} AS v`)).rows[0]!.v;

  it("override a function a migration defined, on a fresh database", async () => {
    await writeFile(join(migrations, "003_label.sql"), "CREATE FUNCTION m.label(p_id INT) RETURNS TEXT LANGUAGE sql AS $$ SELECT 'old' $$;\n");
    await writeFile(join(functions, "label.sql"), label("SELECT label FROM m.items WHERE id = p_id"));
    await migrate(db, "m", migrations, functions);
    expect(await call("m.label(1)")).toBe("one");
  });

  it("are re-applied at every start, idempotently", async () => {
    await writeFile(join(functions, "label.sql"), label("SELECT label FROM m.items WHERE id = p_id"));
    await migrate(db, "m", migrations, functions);
    const first = await functionDefinitions(db, "m");
    await migrate(db, "m", migrations, functions);
    expect(await functionDefinitions(db, "m")).toEqual(first);
    await writeFile(join(functions, "label.sql"), label("SELECT upper(label) FROM m.items WHERE id = p_id"));
    await migrate(db, "m", migrations, functions);
    expect(await call("m.label(1)")).toBe("ONE");
  });

  it("drop the old overload when a function's signature changes, and a function no file defines", async () => {
    await writeFile(join(migrations, "003_orphan.sql"), "CREATE FUNCTION m.orphan() RETURNS INT LANGUAGE sql AS $$ SELECT 1 $$;\n");
    await writeFile(join(functions, "label.sql"), label("SELECT label FROM m.items WHERE id = p_id"));
    await migrate(db, "m", migrations, functions);
    expect([...(await functionDefinitions(db, "m")).keys()]).toEqual(["m.label(p_id integer)"]);
    await writeFile(
      join(functions, "label.sql"),
      "CREATE OR REPLACE FUNCTION m.label(p_id INT, p_suffix TEXT) RETURNS TEXT LANGUAGE sql AS $$ SELECT label || p_suffix FROM m.items WHERE id = p_id $$;\n",
    );
    await migrate(db, "m", migrations, functions);
    expect([...(await functionDefinitions(db, "m")).keys()]).toEqual(["m.label(p_id integer, p_suffix text)"]);
    expect(await call("m.label(1, '!')")).toBe("one!");
  });

  it("keep a trigger's function, which a migration's trigger depends on", async () => {
    await writeFile(join(functions, "refuse.sql"), "CREATE OR REPLACE FUNCTION m.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'read only'; END $$;\n");
    await writeFile(join(migrations, "003_trigger.sql"), "CREATE FUNCTION m.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;\nCREATE TRIGGER items_read_only BEFORE DELETE ON m.items FOR EACH ROW EXECUTE FUNCTION m.refuse();\n");
    await migrate(db, "m", migrations, functions);
    await migrate(db, "m", migrations, functions);
    await expect(db.query("DELETE FROM m.items")).rejects.toThrow(/read only/);
  });
});
