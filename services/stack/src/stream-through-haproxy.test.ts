import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { findHaproxy, HAPROXY_INSTALL_HINT, startBalancer, type RunningBalancer } from "./balancer.ts";
import { freePort } from "./process-stack.ts";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";

// Issue M's acceptance for long jobs behind a proxy: HAProxy (Debian's package, as
// `npm run start:cluster` runs it) in front of the edge with a 20-s idle timeout toward
// the edge (`timeout server 20s`). A streamed 45-s sandbox job with no partial images
// reaches its completed event on the edge's heartbeats alone (the default, every 15 s),
// while the same request without `stream` is cut by HAProxy. Both run at once. Client to
// HAProxy to edge over HTTP/1.1; the services as the test project runs them (e2e-stack.ts).
// Without HAProxy installed this runs only under CI, where .ci/run installs it.

const SERVER_IDLE_TIMEOUT_MS = 20_000;
const JOB = { model: "beta", prompt: "[sandbox:delay=45000] a long night behind a proxy", size: "256x256" } as const;

const needsBalancer = !findHaproxy() && process.env.CI !== "true";
if (needsBalancer) console.log(`stream-through-haproxy.test.ts skipped: HAProxy is not installed (${HAPROXY_INSTALL_HINT})`);

let stack: E2eStack;
let balancer: RunningBalancer;
let configDir: string;

beforeAll(async () => {
  if (needsBalancer) return;
  const haproxy = findHaproxy();
  if (!haproxy) throw new Error(`this test drives HAProxy, which is not installed: ${HAPROXY_INSTALL_HINT}`);
  stack = await startE2eStack();
  configDir = mkdtempSync(join(tmpdir(), "orvado-haproxy-"));
  const edge = new URL(stack.edgeUrl);
  balancer = await startBalancer(
    haproxy,
    join(configDir, "haproxy.cfg"),
    { host: "127.0.0.1", port: await freePort(), edges: [`${edge.hostname}:${edge.port}`], longestRequestMs: 600_000, serverIdleTimeoutMs: SERVER_IDLE_TIMEOUT_MS },
    () => {},
  );
});
afterAll(async () => {
  balancer?.kill();
  await stack?.close();
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

async function fundedKey(): Promise<string> {
  const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
  const { account } = await auth.createAccount({ email: `proxy-${Math.random().toString(36).slice(2)}@example.test`, password: "correct horse battery" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "test" });
  return (await auth.createKey({ accountId: account!.accountId, name: "test" })).secret;
}

describe.skipIf(needsBalancer)("a 45-s job through HAProxy with timeout server 20s (HTTP/1.1 through the balancer)", () => {
  it("completes when streamed, on heartbeats alone, and is cut by the proxy when not", { timeout: 120_000 }, async () => {
    const client = new OpenAI({ apiKey: await fundedKey(), baseURL: `${balancer.url}/v1`, maxRetries: 0, timeout: 90_000 });
    const streamed = (async () => {
      const types: string[] = [];
      for await (const event of await client.images.generate({ ...JOB, stream: true })) types.push(event.type);
      return types;
    })();
    const plain = client.images.generate(JOB).then(
      () => "answered",
      (error: unknown) => error,
    );
    const [types, cut] = await Promise.all([streamed, plain]);
    expect(types).toEqual(["image_generation.completed"]);
    // HAProxy answers 504 once the edge has been silent for its server timeout (or drops the connection).
    expect(cut).toBeInstanceOf(OpenAI.APIError);
    const status = (cut as InstanceType<typeof OpenAI.APIError>).status;
    expect(status === 504 || status === undefined).toBe(true);
  });
});
