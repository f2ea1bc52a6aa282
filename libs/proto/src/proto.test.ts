import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

// The committed generated code must be exactly what `npm run generate` writes today.

const root = new URL("../../../", import.meta.url).pathname;
const bin = join(root, "node_modules/.bin");
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
const scratch = mkdtempSync(join(tmpdir(), "orvado-proto-"));

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("proto contracts", () => {
  it("pass buf lint", () => {
    expect(() => execFileSync(join(bin, "buf"), ["lint"], { cwd: root, env, stdio: "pipe" })).not.toThrow();
  });

  it("match the committed generated code", () => {
    const template = JSON.stringify({
      version: "v2",
      plugins: [{ local: "protoc-gen-es", out: scratch, opt: ["target=ts", "import_extension=ts"] }],
    });
    execFileSync(join(bin, "buf"), ["generate", "--template", template], { cwd: root, env, stdio: "pipe" });
    const committedDir = join(root, "libs/proto/src/gen");
    const fresh = filesUnder(scratch).map((path) => relative(scratch, path)).sort();
    expect(filesUnder(committedDir).map((path) => relative(committedDir, path)).sort()).toEqual(fresh);
    for (const file of fresh) {
      expect(readFileSync(join(committedDir, file), "utf8"), `${file} is stale: run npm run generate`).toBe(readFileSync(join(scratch, file), "utf8"));
    }
  });
});
