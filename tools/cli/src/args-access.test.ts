import { describe, expect, it } from "vitest";
import { parseCommandLine } from "./args.ts";
import { globalUsage, groupUsage } from "./usage.ts";

// accounts disable/enable and keys list/revoke: what the parser accepts and refuses.

describe("parseCommandLine: account access and key management", () => {
  it("reads accounts disable and enable", () => {
    expect(parseCommandLine(["accounts", "disable", "--account", " acct_1 "])).toEqual({
      kind: "run",
      command: { name: "accounts disable", accountId: "acct_1" },
    });
    expect(parseCommandLine(["accounts", "enable", "--account=acct_1"])).toEqual({
      kind: "run",
      command: { name: "accounts enable", accountId: "acct_1" },
    });
  });

  it("reads keys list and keys revoke", () => {
    expect(parseCommandLine(["keys", "list", "--account", "acct_1"])).toEqual({ kind: "run", command: { name: "keys list", accountId: "acct_1" } });
    expect(parseCommandLine(["keys", "revoke", "--account", "acct_1", "--key", "key_9"])).toEqual({
      kind: "run",
      command: { name: "keys revoke", accountId: "acct_1", keyId: "key_9" },
    });
  });

  it("says what is missing or unknown", () => {
    const message = (argv: string[]) => {
      const parsed = parseCommandLine(argv);
      return parsed.kind === "error" ? parsed.message : `not an error: ${parsed.kind}`;
    };
    expect(message(["accounts", "disable"])).toMatch(/^--account is required/);
    expect(message(["keys", "revoke", "--account", "acct_1"])).toMatch(/^--key is required/);
    expect(message(["keys", "list", "--account", "acct_1", "--key", "k"])).toMatch(/unknown option --key/);
  });

  it("documents the new commands", () => {
    for (const text of ["orvado accounts disable --account A", "orvado accounts enable --account A", "orvado keys list --account A", "orvado keys revoke --account A --key K"]) {
      expect(globalUsage()).toContain(text);
    }
    expect(groupUsage("keys")).toContain("orvado keys revoke");
  });
});
