// kafkajs ships no types for its internals; the one this project reaches into
// (kafkajs-request-queue.ts) is described here as far as that file uses it.
declare module "kafkajs/src/network/requestQueue/index.js" {
  class RequestQueue {
    pending: unknown[];
    throttledUntil: number;
    throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
    checkPendingRequests(): void;
    scheduleCheckPendingRequests(): void;
  }
  export default RequestQueue;
}
