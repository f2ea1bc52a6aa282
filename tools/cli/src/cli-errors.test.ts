import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAKE_SECRET, KNOWN_ACCOUNT, run, startFakeServices, type FakeServices } from "./fake-services.ts";

let fake: FakeServices;
let dataDir: string;

beforeAll(async () => {
  fake = await startFakeServices();
  dataDir = await mkdtemp(join(tmpdir(), "orvado-cli-"));
});
afterAll(async () => {
  await fake.close();
  await rm(dataDir, { recursive: true, force: true });
});

const urls = () => ({ ORVADO_AUTH_URL: fake.server.url, ORVADO_BILLING_URL: fake.server.url });
const env = () => ({ ...urls(), ORVADO_INTERNAL_SECRET: FAKE_SECRET });

describe("bad arguments", () => {
  const cases: [string, string[], RegExp][] = [
    ["no command", [], /missing command/],
    ["unknown command", ["acounts"], /unknown command 'acounts'/],
    ["unknown subcommand", ["accounts", "delete"], /unknown command 'accounts delete'/],
    ["missing subcommand", ["keys"], /'keys' needs one of: create/],
    ["unknown flag", ["accounts", "show", "--account", "a", "--verbose"], /unknown option --verbose/],
    ["missing required flag", ["accounts", "topup", "--account", "a"], /--usd is required/],
    ["flag without value", ["accounts", "show", "--account"], /--account needs a value/],
    ["negative usd", ["accounts", "topup", "--account", "a", "--usd", "-1"], /--usd must be a non-negative USD amount.*'-1'/],
    ["text usd", ["accounts", "topup", "--account", "a", "--usd", "abc"], /--usd must be .*'abc'/],
    ["too many decimals", ["accounts", "topup", "--account", "a", "--usd", "1.0000001"], /at most 6 decimals/],
    ["zero top-up", ["accounts", "topup", "--account", "a", "--usd", "0"], /more than 0/],
    ["bad limit", ["keys", "create", "--account", "a", "--limit-usd", "1e3"], /--limit-usd must be/],
    ["text days", ["keys", "create", "--account", "a", "--expires-days", "soon"], /--expires-days must be a whole number/],
    ["bad request id", ["cost", "12345"], /not a request id/],
    ["missing request id", ["cost"], /needs <request_id>/],
    ["extra argument", ["prices", "list", "now"], /unexpected argument 'now'/],
  ];

  it.each(cases)("%s: exit 2, one line on stderr with a --help hint, no request", async (_name, argv, pattern) => {
    const before = fake.total();
    const result = await run(argv, env());
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^orvado: [^\n]+--help'\)\n$/);
    expect(result.stderr).toMatch(pattern);
    expect(fake.total()).toBe(before);
  });

  it("needs no configuration to report a bad argument", async () => {
    const result = await run(["accounts", "topup", "--usd", "x"], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^orvado: --usd must be/);
  });
});

describe("help", () => {
  it.each([[["--help"]], [["help"]], [["-h"]], [["accounts", "--help"]], [["keys", "create", "--help"]], [["cost", "-h"]]])(
    "%j prints usage and exits 0 without configuration",
    async (argv) => {
      const result = await run(argv, {});
      expect(result.code).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toMatch(/Usage/);
      expect(result.stdout).toMatch(/ORVADO_INTERNAL_SECRET/);
    },
  );
});

describe("service errors", () => {
  it("NotFound from auth exits 1 and says what failed", async () => {
    const result = await run(["accounts", "show", "--account", "acct_nope"], env());
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe("orvado: looking up account acct_nope: [not_found] account acct_nope not found\n");
    expect(fake.recorded.getBalance.filter((r) => r.accountId === "acct_nope")).toHaveLength(0);
  });

  it("NotFound from billing exits 1", async () => {
    const result = await run(["cost", "req_ZZZZZZZZZZZZZZZZZZZZZZ"], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "orvado: looking up the cost of req_ZZZZZZZZZZZZZZZZZZZZZZ: [not_found] request req_ZZZZZZZZZZZZZZZZZZZZZZ not found\n",
    );
  });

  it("a wrong secret exits 1 with an unauthenticated message and reaches no handler", async () => {
    const before = fake.total();
    const result = await run(["prices", "list"], { ...urls(), ORVADO_INTERNAL_SECRET: "not-the-secret" });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^orvado: listing prices: \[unauthenticated\] .*ORVADO_INTERNAL_SECRET/);
    expect(fake.total()).toBe(before);
  });

  it("a service that is not running exits 1 saying so", async () => {
    const gone = await startFakeServices();
    const url = gone.server.url;
    await gone.close();
    const result = await run(["accounts", "show", "--account", KNOWN_ACCOUNT], { ...env(), ORVADO_AUTH_URL: url });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `orvado: looking up account ${KNOWN_ACCOUNT}: the auth service at ${url} is not reachable (is \`npm start\` running?)\n`,
    );
  });

  it("a list of replicas with one stopped still answers, from the one running (HTTP/2 over loopback)", async () => {
    const gone = await startFakeServices();
    const goneUrl = gone.server.url;
    await gone.close();
    // The calls the command makes with the one running replica alone, to compare against.
    const start = fake.total();
    const alone = await run(["accounts", "show", "--account", KNOWN_ACCOUNT], { ...env(), ORVADO_AUTH_URL: fake.server.url });
    const callsAlone = fake.total() - start;
    const before = fake.total();
    const result = await run(["accounts", "show", "--account", KNOWN_ACCOUNT], { ...env(), ORVADO_AUTH_URL: `${goneUrl},${fake.server.url}` });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(alone.stdout);
    // Each call handled once: none lost on the stopped replica, none sent twice.
    expect(fake.total() - before).toBe(callsAlone);
  });

  it("a list of replicas none of which runs exits 1 naming them all", async () => {
    const urls = [];
    for (let i = 0; i < 2; i++) {
      const gone = await startFakeServices();
      urls.push(gone.server.url);
      await gone.close();
    }
    const result = await run(["accounts", "show", "--account", KNOWN_ACCOUNT], { ...env(), ORVADO_AUTH_URL: urls.join(",") });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `orvado: looking up account ${KNOWN_ACCOUNT}: the auth service at ${urls.join(", ")} is not reachable (is \`npm start\` running?)\n`,
    );
  });
});

describe("the internal secret", () => {
  it("is read from <ORVADO_DATA_DIR>/secrets.json when the env var is unset", async () => {
    await writeFile(join(dataDir, "secrets.json"), JSON.stringify({ internalSecret: FAKE_SECRET, other: "x" }));
    const result = await run(["prices", "list"], { ...urls(), ORVADO_DATA_DIR: dataDir });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.json().prices).toHaveLength(2);
  });

  it("missing everywhere exits 2 telling the operator what to do, with no request", async () => {
    const before = fake.total();
    const empty = await mkdtemp(join(tmpdir(), "orvado-cli-empty-"));
    try {
      const result = await run(["prices", "list"], { ...urls(), ORVADO_DATA_DIR: empty });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^orvado: .*set ORVADO_INTERNAL_SECRET.*`npm start`/);
      expect(result.stderr).toContain(join(empty, "secrets.json"));
      expect(fake.total()).toBe(before);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("a secrets file without internalSecret exits 2", async () => {
    const broken = await mkdtemp(join(tmpdir(), "orvado-cli-broken-"));
    try {
      await writeFile(join(broken, "secrets.json"), JSON.stringify({ somethingElse: "x" }));
      const result = await run(["prices", "list"], { ...urls(), ORVADO_DATA_DIR: broken });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/has no "internalSecret"/);
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  });

  it("an invalid service URL exits 2 on one line", async () => {
    const result = await run(["prices", "list"], { ...env(), ORVADO_BILLING_URL: "not a url" });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^orvado: Invalid configuration: ORVADO_BILLING_URL: [^\n]+\n$/);
  });
});
