import { describe, expect, it } from "vitest";
import { parsePrefer, prefersRespondAsync } from "./prefer.ts";

// The Prefer header's grammar (RFC 7240, section 2), as the edge reads it: a pure function, no transport.
// Over real HTTP the header is exercised by services/stack/src/async-submit.test.ts.

describe("parsePrefer", () => {
  it("reads several comma-separated preferences, with and without values", () => {
    expect([...parsePrefer("respond-async, wait=10")]).toEqual([
      ["respond-async", ""],
      ["wait", "10"],
    ]);
  });

  it("compares names without case and keeps only the first of a repeated preference", () => {
    expect([...parsePrefer("Respond-Async, WAIT=5, wait=100")]).toEqual([
      ["respond-async", ""],
      ["wait", "5"],
    ]);
  });

  it("takes the preferences of several header lines (as Node gives them)", () => {
    expect([...parsePrefer(["return=minimal", "respond-async"]).keys()]).toEqual(["return", "respond-async"]);
    expect(prefersRespondAsync("return=minimal, respond-async")).toBe(true);
  });

  it("allows spaces around '=' and drops parameters after ';'", () => {
    expect([...parsePrefer("handling = lenient ; foo=bar, respond-async;x")]).toEqual([
      ["handling", "lenient"],
      ["respond-async", ""],
    ]);
  });

  it("unquotes quoted values, whose commas and semicolons do not split", () => {
    expect([...parsePrefer('foo="a, b; \\"c\\"", respond-async')]).toEqual([
      ["foo", 'a, b; "c"'],
      ["respond-async", ""],
    ]);
  });

  it("ignores what is not a preference: empty elements, names that are not tokens", () => {
    expect([...parsePrefer(" , ,respond async, @x, respond-async")]).toEqual([["respond-async", ""]]);
    expect(prefersRespondAsync("")).toBe(false);
    expect(prefersRespondAsync(undefined)).toBe(false);
  });

  it("does not mistake a longer name or a value for respond-async", () => {
    expect(prefersRespondAsync("respond-asynchronously")).toBe(false);
    expect(prefersRespondAsync("return=respond-async")).toBe(false);
    expect(prefersRespondAsync('foo="x, respond-async"')).toBe(false);
  });
});
