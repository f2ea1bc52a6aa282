import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "@orvado/core";
import { migrate } from "@orvado/db";
import { Role } from "@orvado/proto";
import { DEFAULT_ADMIN_EMAIL, ensureAdmin } from "./bootstrap.ts";
import { startAuth } from "./index.ts";
import { verifyPassword } from "./passwords.ts";
import { createAccount } from "./service.ts";
import { openTestDb, testConfig } from "./testing.ts";

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

// One database for the file (PGlite takes seconds to open); each test starts from
// an empty auth schema, as a first start on a new install would.
let database: Awaited<ReturnType<typeof openTestDb>>;
beforeAll(async () => {
  database = await openTestDb();
});
afterAll(() => database?.close());
beforeEach(async () => {
  await database.db.exec("DROP SCHEMA IF EXISTS auth CASCADE");
});

async function admins() {
  const result = await database.db.query<{ email: string; password_hash: string }>(
    "SELECT email, password_hash FROM auth.accounts WHERE role = 'admin'",
  );
  return result.rows;
}

describe("admin bootstrap", () => {
  it("creates one admin with a generated password, logged once, across two starts", async () => {
    const logger = createLogger("auth-test", "silent");
    const warn = vi.spyOn(logger, "warn");
    for (let start = 0; start < 2; start++) {
      const auth = await startAuth(testConfig(database.url), { db: database.db, logger });
      await auth.stop();
    }
    const rows = await admins();
    expect(rows.map((row) => row.email)).toEqual([DEFAULT_ADMIN_EMAIL]);
    const lines = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.includes("generated password"));
    expect(lines).toHaveLength(1);
    const password = /generated password (\S+)/.exec(lines[0]!)?.[1];
    expect(password).toBeDefined();
    expect(password!.length).toBeGreaterThanOrEqual(16);
    expect(await verifyPassword(password!, rows[0]!.password_hash)).toBe(true);
  });

  it("uses configured credentials and logs no password", async () => {
    const logger = createLogger("auth-test", "silent");
    const warn = vi.spyOn(logger, "warn");
    const config = testConfig(database.url, { adminEmail: " Ops@Example.com", adminPassword: "configured-pw" });
    for (let start = 0; start < 2; start++) await (await startAuth(config, { db: database.db, logger })).stop();
    const rows = await admins();
    expect(rows.map((row) => row.email)).toEqual(["ops@example.com"]);
    expect(await verifyPassword("configured-pw", rows[0]!.password_hash)).toBe(true);
    expect(warn).not.toHaveBeenCalled();
  });

  it("creates exactly one admin when replicas start together", async () => {
    await migrate(database.db, "auth", MIGRATIONS);
    const logger = createLogger("auth-test", "silent");
    await Promise.all([1, 2, 3].map(() => ensureAdmin(database.db, logger, {})));
    expect(await admins()).toHaveLength(1);
  });

  it("does not promote an existing user who holds the admin email", async () => {
    await migrate(database.db, "auth", MIGRATIONS);
    await createAccount(database.db, { email: "taken@example.com", password: "password-1", role: Role.USER });
    const logger = createLogger("auth-test", "silent");
    const error = vi.spyOn(logger, "error");
    await ensureAdmin(database.db, logger, { adminEmail: "taken@example.com", adminPassword: "password-2" });
    expect(await admins()).toHaveLength(0);
    expect(error).toHaveBeenCalledOnce();
  });
});
