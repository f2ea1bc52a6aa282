import { describe, expect, it } from "vitest";
import { planBrowserSuites } from "./browser-suites.ts";

// Whether the browser suites run: a pure function of the environment and of whether
// the Chromium binary exists (no transport; the check itself is a file lookup).

const present = () => true;
const absent = () => false;

describe("planBrowserSuites", () => {
  it("runs the browser suites where Debian's Chromium is installed", () => {
    expect(planBrowserSuites({}, present)).toEqual({ runs: true, chromium: "/usr/bin/chromium", reason: "Chromium is at /usr/bin/chromium" });
  });

  it("leaves them out without Chromium, saying why and how to install it", () => {
    const plan = planBrowserSuites({}, absent);
    expect(plan.runs).toBe(false);
    expect(plan.reason).toBe("Chromium is not installed at /usr/bin/chromium; install Debian's package: apt-get install -y chromium");
    expect(plan.refusal).toBeUndefined();
  });

  it("refuses a CI run without Chromium", () => {
    const plan = planBrowserSuites({ CI: "true" }, absent);
    expect(plan.runs).toBe(false);
    expect(plan.refusal).toContain("CI runs the browser suites, but Chromium is not installed at /usr/bin/chromium");
  });

  it("looks where CONSOLE_TEST_CHROMIUM points", () => {
    const looked: string[] = [];
    const plan = planBrowserSuites({ CONSOLE_TEST_CHROMIUM: "/opt/chromium/chrome" }, (path) => looked.push(path) > 0);
    expect(looked).toEqual(["/opt/chromium/chrome"]);
    expect(plan).toMatchObject({ runs: true, chromium: "/opt/chromium/chrome" });
  });
});
