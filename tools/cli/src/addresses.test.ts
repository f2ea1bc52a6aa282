import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readAddressesFile, writeAddressesFile } from "@orvado/core";
import { loadConfig } from "./config.ts";

// The addresses file npm start leaves in the data dir, read by the CLI's config: real files in
// a temporary directory and real process ids (a process that has exited makes a file stale).

const dataDir = mkdtempSync(join(tmpdir(), "orvado-addresses-"));
writeFileSync(join(dataDir, "secrets.json"), JSON.stringify({ internalSecret: "from-the-secrets-file" }));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const addresses = { edge: "http://127.0.0.1:41000", auth: ["http://127.0.0.1:41001"], billing: ["http://127.0.0.1:41002", "http://127.0.0.1:41012"], generation: ["http://127.0.0.1:41003"] };

describe("the CLI's addresses from the running stack's file (filesystem, process ids)", () => {
  it("takes every unset address from the file of a running stack; a variable that is set wins", () => {
    const remove = writeAddressesFile(dataDir, addresses);
    try {
      const config = loadConfig({ ORVADO_DATA_DIR: dataDir });
      expect([config.authUrls, config.billingUrls, config.generationUrls]).toEqual([addresses.auth, addresses.billing, addresses.generation]);
      expect(config.secret).toBe("from-the-secrets-file");
      const mixed = loadConfig({ ORVADO_DATA_DIR: dataDir, ORVADO_AUTH_URL: "http://127.0.0.1:9" });
      expect([mixed.authUrls, mixed.billingUrls]).toEqual([["http://127.0.0.1:9"], addresses.billing]);
    } finally {
      remove();
    }
    expect(readAddressesFile(dataDir)).toMatchObject({ problem: "missing" });
  });

  it("ignores a file whose process has exited, and falls back to the defaults", () => {
    const exited = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(join(dataDir, "addresses.json"), JSON.stringify({ pid: exited, startedAt: new Date().toISOString(), ...addresses }));
    expect(readAddressesFile(dataDir)).toMatchObject({ problem: "stale" });
    const config = loadConfig({ ORVADO_DATA_DIR: dataDir });
    expect([config.authUrls, config.billingUrls, config.generationUrls]).toEqual([["http://127.0.0.1:7101"], ["http://127.0.0.1:7102"], ["http://127.0.0.1:7103"]]);
    writeFileSync(join(dataDir, "addresses.json"), "{ not json");
    expect(readAddressesFile(dataDir)).toMatchObject({ problem: "unreadable" });
    expect(loadConfig({ ORVADO_DATA_DIR: dataDir }).authUrls).toEqual(["http://127.0.0.1:7101"]);
  });
});
