import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// The launcher is what operators run (`npx orvado`), so it is tested as a real process.
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const bin = "tools/cli/bin/orvado.js";

async function spawnCli(args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? "" },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("bin/orvado.js", () => {
  it("--help exits 0 with the usage text", async () => {
    const result = await spawnCli(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^orvado: the Orvado operator's command line/);
    expect(result.stdout).toContain("orvado accounts topup --account A --usd 12.50");
    expect(result.stderr).toBe("");
  });

  it("bad arguments exit 2 with one line on stderr", async () => {
    const result = await spawnCli(["accounts", "topup", "--account", "acct_x", "--usd", "abc"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^orvado: --usd must be [^\n]*--help'\)\n$/);
  });
});
