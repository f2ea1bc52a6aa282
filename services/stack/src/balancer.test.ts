import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TIMING_DEFAULTS } from "@orvado/core";
import { loadEdgeConfig } from "@orvado/edge";
import { haproxyConfig } from "./balancer.ts";

// The balancer's timeouts against the edges' and the jobs' (issue 56 item 4), in both HAProxy
// configurations: the one `npm run start:cluster` writes (balancer.ts) and deploy/haproxy.cfg.
// Read as text, no transport: HAProxy itself runs them in cluster.kafka.test.ts, and
// `haproxy -c -f deploy/haproxy.cfg` checks the file's syntax (deploy/README.md).

const EDGE = loadEdgeConfig({ ORVADO_INTERNAL_SECRET: "balancer-test-secret-0123456789" });
const JOB_LIMIT_MS = TIMING_DEFAULTS.GENERATION_JOB_TIMEOUT_MS;

/** Each `timeout <name> <value>` of the defaults section, in milliseconds. */
function timeouts(config: string): Record<string, number> {
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };
  return Object.fromEntries(
    [...config.matchAll(/^\s*timeout (\S+) (\d+)(ms|s|m)?\s*$/gm)].map(([, name, value, suffix]) => [name!, Number(value) * unit[suffix ?? "ms"]!]),
  );
}

const CONFIGS = {
  "start:cluster's (balancer.ts)": haproxyConfig({ host: "127.0.0.1", port: 8080, edges: ["127.0.0.1:9001"], longestRequestMs: JOB_LIMIT_MS }),
  "deploy/haproxy.cfg": readFileSync(new URL("../../../deploy/haproxy.cfg", import.meta.url), "utf8"),
};

describe.each(Object.entries(CONFIGS))("the HAProxy configuration %s", (_name, config) => {
  const timeout = timeouts(config);

  it("lets an idle keep-alive connection go before the edge's default keep-alive does", () => {
    expect(timeout["http-keep-alive"]).toBeGreaterThan(0);
    expect(timeout["http-keep-alive"]).toBeLessThan(EDGE.keepAliveTimeoutMs);
  });

  it("waits longer than the longest job on both sides, and for tunnels", () => {
    for (const name of ["client", "server", "tunnel"]) expect(timeout[name], name).toBeGreaterThanOrEqual(JOB_LIMIT_MS + 30_000);
  });

  it("bounds a request's arrival as the edge does", () => {
    expect(timeout["http-request"]).toBe(EDGE.requestTimeoutMs);
  });
});

describe("the edge's default keep-alive", () => {
  it("outlasts the idle timeout of common load balancers (AWS ALB: 60 s)", () => {
    expect(EDGE.keepAliveTimeoutMs).toBe(72_000);
    expect(EDGE.keepAliveTimeoutMs).toBeGreaterThan(60_000);
  });
});
