import { afterEach, describe, expect, it } from "vitest";
import RequestQueue from "kafkajs/src/network/requestQueue/index.js";
import { fixKafkajsRequestQueue, scheduleCheckOnlyWhenNeeded } from "./kafkajs-request-queue.ts";

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
