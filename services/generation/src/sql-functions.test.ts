// Each of generation's SQL functions is defined once, in sql/functions/<name>.sql,
// and a database ends with exactly those definitions whether it was made fresh or
// existed before the files (its functions then came from the migrations). On
// PostgreSQL when TEST_DATABASE_URL is set, else PGlite.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { functionFileNames, sqlFunctionPaths } from "@orvado/testkit";

const MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));
const FUNCTIONS = fileURLToPath(new URL("../sql/functions", import.meta.url));

describe("generation's SQL functions", () => {
  it("are the files' definitions, one function per file, on a fresh and on an existing database", async () => {
    const paths = await sqlFunctionPaths("generation", MIGRATIONS, FUNCTIONS);
    const names = [...paths.fresh.keys()].map((signature) => signature.slice("generation.".length, signature.indexOf("(")));
    expect(names.sort()).toEqual(functionFileNames(FUNCTIONS));
    expect(paths.existing).toEqual(paths.fresh);
    // Running the files again changes no definition: the database holds what they create.
    expect(paths.filesAgain).toEqual(paths.existing);
  });
});
