// The endpoint limit per account on PostgreSQL (TEST_DATABASE_URL; PGlite otherwise): two
// connection pools on one database stand for two generation replicas creating at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb, type Db } from "@orvado/db";
import { openGenerationTestDb } from "../test-support.ts";
import { createEndpoint, listEndpoints, MAX_ENDPOINTS_PER_ACCOUNT, TooManyEndpoints } from "./endpoints.ts";

let database: Awaited<ReturnType<typeof openGenerationTestDb>>;
let otherReplica: Db;

beforeAll(async () => {
  database = await openGenerationTestDb();
  otherReplica = process.env.TEST_DATABASE_URL ? await openDb(database.url) : database.db;
});
afterAll(async () => {
  if (otherReplica !== database?.db) await otherReplica?.close();
  await database?.close();
});

describe("webhook endpoints per account", () => {
  it("creates no more than the limit when two replicas create many at once", async () => {
    const attempts = Array.from({ length: MAX_ENDPOINTS_PER_ACCOUNT * 2 }, (_, index) =>
      createEndpoint(index % 2 === 0 ? database.db : otherReplica, "acct_race", `https://hooks.example.com/${index}`, []).then(
        () => "created",
        (error: unknown) => (error instanceof TooManyEndpoints ? "refused" : Promise.reject(error)),
      ),
    );
    const outcomes = await Promise.all(attempts);
    expect(outcomes.filter((outcome) => outcome === "created")).toHaveLength(MAX_ENDPOINTS_PER_ACCOUNT);
    expect(await listEndpoints(database.db, "acct_race")).toHaveLength(MAX_ENDPOINTS_PER_ACCOUNT);
  });

  it("counts each account on its own", async () => {
    await createEndpoint(database.db, "acct_other", "https://hooks.example.com/other", []);
    expect(await listEndpoints(database.db, "acct_other")).toHaveLength(1);
  });
});
