import { describe, expect, it } from "vitest";
import { loadAuthConfig } from "./config.ts";

const SECRET = "0123456789abcdef";

describe("auth config", () => {
  it("has defaults for everything but the internal secret", () => {
    expect(loadAuthConfig({ ORVADO_INTERNAL_SECRET: SECRET })).toEqual({
      host: "127.0.0.1",
      port: 7101,
      internalSecret: SECRET,
      databaseUrl: "./data/pglite",
      sessions: { idleMs: 12 * 3_600_000, maxMs: 7 * 86_400_000 },
      signInLimits: { windowMs: 15 * 60_000, maxPerAccount: 10, maxPerIp: 50 },
    });
  });

  it("reads every variable", () => {
    const config = loadAuthConfig({
      AUTH_HOST: "0.0.0.0",
      AUTH_PORT: "9000",
      ORVADO_INTERNAL_SECRET: SECRET,
      DATABASE_URL: "postgres://db/orvado",
      ORVADO_ADMIN_EMAIL: "ops@example.com",
      ORVADO_ADMIN_PASSWORD: "long enough",
      AUTH_SESSION_IDLE_MS: "60000",
      AUTH_SESSION_MAX_MS: "120000",
      AUTH_SIGNIN_WINDOW_MS: "30000",
      AUTH_SIGNIN_MAX_FAILURES_PER_ACCOUNT: "3",
      AUTH_SIGNIN_MAX_FAILURES_PER_IP: "7",
    });
    expect(config).toEqual({
      host: "0.0.0.0",
      port: 9000,
      internalSecret: SECRET,
      databaseUrl: "postgres://db/orvado",
      adminEmail: "ops@example.com",
      adminPassword: "long enough",
      sessions: { idleMs: 60_000, maxMs: 120_000 },
      signInLimits: { windowMs: 30_000, maxPerAccount: 3, maxPerIp: 7 },
    });
  });

  it("refuses a missing or short secret and a bad port", () => {
    expect(() => loadAuthConfig({})).toThrow(/ORVADO_INTERNAL_SECRET/);
    expect(() => loadAuthConfig({ ORVADO_INTERNAL_SECRET: "short" })).toThrow(/at least 16/);
    expect(() => loadAuthConfig({ ORVADO_INTERNAL_SECRET: SECRET, AUTH_PORT: "70000" })).toThrow(/AUTH_PORT/);
  });

  it("wants both admin variables or neither, and a real password", () => {
    expect(() => loadAuthConfig({ ORVADO_INTERNAL_SECRET: SECRET, ORVADO_ADMIN_EMAIL: "a@b.co" })).toThrow(/both/);
    expect(() => loadAuthConfig({ ORVADO_INTERNAL_SECRET: SECRET, ORVADO_ADMIN_PASSWORD: "long enough" })).toThrow(/both/);
    expect(() =>
      loadAuthConfig({ ORVADO_INTERNAL_SECRET: SECRET, ORVADO_ADMIN_EMAIL: "a@b.co", ORVADO_ADMIN_PASSWORD: "short" }),
    ).toThrow(/at least 8/);
    expect(loadAuthConfig({ ORVADO_INTERNAL_SECRET: SECRET, ORVADO_ADMIN_EMAIL: "", ORVADO_ADMIN_PASSWORD: "" })).not.toHaveProperty(
      "adminEmail",
    );
  });
});
