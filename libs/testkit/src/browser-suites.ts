import { existsSync } from "node:fs";

// Whether the browser suites (*-browser.test.ts: Debian's Chromium driven by
// playwright-core) run. vitest.config.ts asks once, when it loads, as it does for
// the Kafka project (test-services.ts): without Chromium the files are left out of
// the run with a printed reason, so `npm ci && npm test` passes on a machine
// without it; CI (CI=true) must run them, so there a missing Chromium refuses the run.

/** The files that drive a real browser; they name themselves so. */
export const BROWSER_SUITES = ["**/*-browser.test.ts"];

/** Debian's package; CONSOLE_TEST_CHROMIUM may point elsewhere. */
export const DEFAULT_CHROMIUM = "/usr/bin/chromium";

export const CHROMIUM_INSTALL = "apt-get install -y chromium";

export interface BrowserSuitesPlan {
  runs: boolean;
  chromium: string;
  reason: string;
  /** Set when the run must not start: with CI=true the browser suites have to run. */
  refusal?: string;
}

/** The variables the choice reads. */
export interface BrowserSuitesEnv {
  CONSOLE_TEST_CHROMIUM?: string;
  CI?: string;
}

/** The choice itself: run where the Chromium binary exists; refuse in CI where it does not. */
export function planBrowserSuites(env: BrowserSuitesEnv, exists: (path: string) => boolean = existsSync): BrowserSuitesPlan {
  const chromium = env.CONSOLE_TEST_CHROMIUM?.trim() || DEFAULT_CHROMIUM;
  if (exists(chromium)) return { runs: true, chromium, reason: `Chromium is at ${chromium}` };
  const reason = `Chromium is not installed at ${chromium}; install Debian's package: ${CHROMIUM_INSTALL}`;
  if (env.CI !== "true") return { runs: false, chromium, reason };
  return { runs: false, chromium, reason, refusal: `CI runs the browser suites, but ${reason} (.ci/run does).` };
}
