import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["libs/*/src/**/*.test.ts", "services/**/*.test.ts", "tools/*/src/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: ["**/node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more workers only add contention on the shared PostgreSQL.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
