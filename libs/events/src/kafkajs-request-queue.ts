import { createRequire } from "node:module";
import RequestQueue from "kafkajs/src/network/requestQueue/index.js";

/**
 * kafkajs 2.2.4 (its last release) re-arms a timer after every check of a
 * connection's pending requests, also when none is pending and the broker
 * throttles nothing: the delay is then negative, Node runs it after 1 ms, and
 * every open broker connection wakes its process about a thousand times a
 * second for as long as it stays open. Upstream, open:
 * https://github.com/tulios/kafkajs/issues/1556 and
 * https://github.com/tulios/kafkajs/issues/1704.
 * docs/design-choices.md#kafkajs-timer says what that cost.
 *
 * The replacement schedules a check only for what can need one: requests
 * waiting to be sent (after the throttle, or kafkajs's 10-ms retry once it is
 * over) or a throttle still running. Nothing else changes: a request that cannot
 * go at once still schedules its check when it is queued, and every answer
 * still checks the queue.
 *
 * It replaces a method of a class kafkajs does not export, the only such patch
 * in Orvado, so it is fenced: every package.json pins kafkajs to exactly
 * 2.2.4, and loading this file with any other version installed throws, so
 * that an upgrade is a decision to look at this file again (drop it if the
 * new version fixes the loop), not a silent change under it.
 */
export const PATCHED_KAFKAJS_VERSION = "2.2.4";
const RETRY_PENDING_MS = 10;

/** Throws unless `installed` is the kafkajs version this patch was written for. */
export function checkKafkajsVersion(installed: string): void {
  if (installed === PATCHED_KAFKAJS_VERSION) return;
  throw new Error(
    `libs/events/src/kafkajs-request-queue.ts patches kafkajs ${PATCHED_KAFKAJS_VERSION}'s RequestQueue, but kafkajs ${installed} is installed: ` +
      "see whether it still re-arms its pending-request timer when idle (tulios/kafkajs#1556, #1704), then update or remove that file and the kafkajs pin",
  );
}

checkKafkajsVersion((createRequire(import.meta.url)("kafkajs/package.json") as { version: string }).version);

export function scheduleCheckOnlyWhenNeeded(this: RequestQueue): void {
  if (this.throttleCheckTimeoutId) return;
  const throttledForMs = this.throttledUntil - Date.now();
  if (this.pending.length === 0 && throttledForMs <= 0) return;
  const waitMs = throttledForMs > 0 ? throttledForMs : RETRY_PENDING_MS;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, waitMs);
}

/** Installs the replacement on kafkajs's RequestQueue; kafka.ts does so when it is loaded, and so does the analysts' example consumer. */
export function fixKafkajsRequestQueue(): void {
  if (typeof RequestQueue.prototype.scheduleCheckPendingRequests !== "function") {
    throw new Error("kafkajs's RequestQueue has no scheduleCheckPendingRequests: see kafkajs-request-queue.ts");
  }
  RequestQueue.prototype.scheduleCheckPendingRequests = scheduleCheckOnlyWhenNeeded;
}
