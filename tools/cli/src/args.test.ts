import { describe, expect, it } from "vitest";
import { parseCommandLine, type Command } from "./args.ts";

const command = (argv: string[]): Command => {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== "run") throw new Error(`expected a command, got ${JSON.stringify(parsed)}`);
  return parsed.command;
};
const errorOf = (argv: string[]): string => {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== "error") throw new Error(`expected an error, got ${JSON.stringify(parsed)}`);
  return parsed.message;
};

describe("parseCommandLine: commands", () => {
  it("reads accounts create, trimming the email but never the password", () => {
    expect(command(["accounts", "create", "--email", " a@b.co ", "--password", " p w "])).toEqual({
      name: "accounts create",
      email: "a@b.co",
      password: " p w ",
      admin: false,
    });
    expect(command(["accounts", "create", "--admin", "--email=a@b.co", "--password=x"])).toMatchObject({ admin: true });
  });

  it("reads topup amounts exactly as micros", () => {
    expect(command(["accounts", "topup", "--account", "acct_1", "--usd", "12.50"])).toEqual({
      name: "accounts topup",
      accountId: "acct_1",
      amountMicros: 12_500_000n,
      note: "",
    });
    expect(command(["accounts", "topup", "--account", "acct_1", "--usd", "999999999999.999999", "--note", "n"])).toMatchObject({
      amountMicros: 999_999_999_999_999_999n,
      note: "n",
    });
  });

  it("reads keys create with every option", () => {
    expect(
      command(["keys", "create", "--account", "acct_1", "--name", "ci", "--limit-usd", "0", "--expires-days", "7", "--models", "a,b, a", "--rpm", "60"]),
    ).toEqual({ name: "keys create", accountId: "acct_1", keyName: "ci", limitMicros: 0n, expiresDays: 7, models: ["a", "b"], rpm: 60 });
    expect(command(["keys", "create", "--account", "acct_1"])).toEqual({
      name: "keys create",
      accountId: "acct_1",
      keyName: "",
      limitMicros: null,
      expiresDays: null,
      models: [],
      rpm: null,
    });
  });

  it("reads accounts limits: a number, 'default' or 0 for --max-concurrent; 0 clears --rpm; an absent flag is kept", () => {
    expect(command(["accounts", "limits", "--account", "acct_1", "--max-concurrent", "4", "--rpm", "120"])).toEqual({
      name: "accounts limits",
      accountId: "acct_1",
      maxConcurrent: 4,
      rpm: 120,
    });
    expect(command(["accounts", "limits", "--account", "acct_1", "--max-concurrent", "default", "--rpm", "0"])).toMatchObject({ maxConcurrent: null, rpm: null });
    expect(command(["accounts", "limits", "--account", "acct_1", "--max-concurrent", "0"])).toMatchObject({ maxConcurrent: 0, rpm: undefined });
    expect(parseCommandLine(["accounts", "limits", "--account", "acct_1", "--rpm", "-3"])).toMatchObject({ kind: "error", message: expect.stringContaining("--rpm must be a whole number") });
    expect(parseCommandLine(["accounts", "limits", "--account", "acct_1", "--max-concurrent", "100001"])).toMatchObject({ kind: "error" });
  });

  it("reads cost and prices list", () => {
    expect(command(["cost", "req_AAAAAAAAAAAAAAAAAAAAAA"])).toEqual({ name: "cost", requestId: "req_AAAAAAAAAAAAAAAAAAAAAA" });
    expect(command(["prices", "list"])).toEqual({ name: "prices list" });
  });

  it("takes a value after -- literally", () => {
    expect(command(["cost", "--", "req_-AAAAAAAAAAAAAAAAAAAAA"])).toEqual({ name: "cost", requestId: "req_-AAAAAAAAAAAAAAAAAAAAA" });
  });
});

describe("parseCommandLine: help", () => {
  it("answers help for the whole tool and for each group", () => {
    const global = parseCommandLine(["--help"]);
    expect(global.kind).toBe("help");
    expect(global.kind === "help" && global.text).toMatch(/orvado accounts create.*\n[\s\S]*orvado prices list/);
    const keys = parseCommandLine(["keys", "create", "--bogus", "--help"]);
    expect(keys.kind === "help" && keys.text).toMatch(/orvado keys create/);
    expect(keys.kind === "help" && keys.text).not.toMatch(/orvado accounts create/);
    expect(parseCommandLine(["help", "prices"]).kind).toBe("help");
  });

  it("does not treat --help after -- as a request for help", () => {
    expect(errorOf(["cost", "--", "--help"])).toMatch(/not a request id/);
  });
});

describe("parseCommandLine: mistakes", () => {
  it.each([
    [["accounts", "topup", "--account", "a", "--usd", "-1"], "--usd must be a non-negative USD amount"],
    [["accounts", "topup", "--account", "a", "--usd=-1"], "--usd must be a non-negative USD amount"],
    [["accounts", "topup", "--account", "a", "--usd", "1.0000001"], "at most 6 decimals"],
    [["accounts", "topup", "--account", "a", "--usd", "1,5"], "got '1,5'"],
    [["accounts", "topup", "--account", "a", "--usd", "0.000000"], "--usd must be more than 0"],
    [["accounts", "topup", "--account", "  ", "--usd", "1"], "--account needs a value"],
    [["accounts", "create", "--email", "a@b.co", "--password", "--admin"], "--password needs a value"],
    [["accounts", "create", "--email", "nobody", "--password", "x"], "--email must be an email address"],
    [["accounts", "create", "--email", "a@b.co", "--password", "x", "--admin=yes"], "--admin takes no value"],
    [["accounts", "show", "--account", "a", "--account", "b"], "--account is given more than once"],
    [["accounts", "show", "-a", "x"], "unknown option -a"],
    [["keys", "create", "--account", "a", "--expires-days", "1.5"], "--expires-days must be a whole number"],
    [["keys", "create", "--account", "a", "--expires-days", "0"], "from 1 to 3650"],
    [["keys", "create", "--account", "a", "--expires-days", "99999"], "from 1 to 3650"],
    [["keys", "create", "--account", "a", "--models", "a,,b"], "--models must be model ids separated by commas"],
    [["keys", "create", "--account", "a", "--name", "x".repeat(501)], "--name is longer than 500"],
    [["--verbose"], "unknown option --verbose"],
    [["help", "nothing"], "unknown command 'nothing'"],
    [["keys", "constructor"], "unknown command 'keys constructor'"],
    [["ledger", "statement", "--account", "a", "--from", "-271821-04-20T00:00:00Z"], "between the years 0001 and 9999"],
    [["ledger", "statement", "--account", "a", "--to", "+275760-09-13T00:00:00Z"], "between the years 0001 and 9999"],
    [["accounts", "toString", "--account", "a"], "unknown command 'accounts toString'"],
    [["accounts", "show", "--account", "a", "--constructor", "x"], "unknown option --constructor"],
    [["accounts", "show", "--account", "a", "--__proto__=x"], "unknown option --__proto__"],
  ])("%j -> %s", (argv, fragment) => {
    const message = errorOf(argv);
    expect(message).toContain(fragment);
    expect(message).not.toContain("\n");
    expect(message).toMatch(/\(see 'orvado ([a-z]+ )?--help'\)$/);
  });
});
