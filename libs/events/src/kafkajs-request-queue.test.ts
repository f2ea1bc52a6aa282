import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import RequestQueue from "kafkajs/src/network/requestQueue/index.js";
import { checkKafkajsVersion, fixKafkajsRequestQueue, scheduleCheckOnlyWhenNeeded } from "./kafkajs-request-queue.ts";

// No transport: kafkajs's RequestQueue in memory, its scheduling of pending-request
// checks as replaced by kafkajs-request-queue.ts. The same queue on a real broker:
// kafkajs-request-queue.kafka.test.ts.

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const queues: RequestQueue[] = [];

function queue(): RequestQueue {
  const made = new (RequestQueue as unknown as new (options: object) => RequestQueue)({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: "request-queue-test",
    broker: "127.0.0.1:9",
    logger: silent,
  });
  queues.push(made);
  return made;
}

afterEach(() => {
  for (const made of queues.splice(0)) if (made.throttleCheckTimeoutId) clearTimeout(made.throttleCheckTimeoutId);
});

describe("kafkajs's RequestQueue: a check of pending requests is scheduled only when one can be needed", () => {
  it("is installed on kafkajs's own class once kafka.ts is loaded", async () => {
    await import("./kafka.ts");
    expect(RequestQueue.prototype.scheduleCheckPendingRequests).toBe(scheduleCheckOnlyWhenNeeded);
    expect(() => fixKafkajsRequestQueue()).not.toThrow();
  });

  it("schedules nothing with no request pending and no throttle (kafkajs 2.2.4 armed a 1-ms timer here, again after every check)", () => {
    const idle = queue();
    idle.checkPendingRequests();
    expect(idle.throttleCheckTimeoutId).toBeNull();
    idle.scheduleCheckPendingRequests();
    expect(idle.throttleCheckTimeoutId).toBeNull();
  });

  it("schedules a check for a request waiting to be sent, and for a throttle still running", () => {
    const waiting = queue();
    waiting.pending.push({});
    waiting.scheduleCheckPendingRequests();
    expect(waiting.throttleCheckTimeoutId).not.toBeNull();

    const throttled = queue();
    throttled.throttledUntil = Date.now() + 60_000;
    throttled.scheduleCheckPendingRequests();
    expect(throttled.throttleCheckTimeoutId).not.toBeNull();
  });

  it("keeps one scheduled check at a time", () => {
    const waiting = queue();
    waiting.pending.push({});
    waiting.scheduleCheckPendingRequests();
    const first = waiting.throttleCheckTimeoutId;
    waiting.scheduleCheckPendingRequests();
    expect(waiting.throttleCheckTimeoutId).toBe(first);
  });
});

describe("the kafkajs version the patch is fenced to", () => {
  it("is the one installed: loading the patch did not throw", () => {
    expect(() => checkKafkajsVersion(createRequire(import.meta.url)("kafkajs/package.json").version)).not.toThrow();
  });

  it("refuses any other version, naming the patch file and the upstream issues", () => {
    for (const other of ["2.2.5", "2.3.0", "3.0.0", "2.2.3", "2.2.4-beta.1"]) {
      expect(() => checkKafkajsVersion(other), other).toThrow(/kafkajs-request-queue\.ts .*kafkajs 2\.2\.4.*kafkajs [^ ]+ is installed.*tulios\/kafkajs#1556, #1704/);
    }
  });
});
