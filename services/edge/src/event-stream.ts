import { once } from "node:events";
import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";

// A text/event-stream answer (docs/api.md#streaming), written through Fastify's reply
// with a Node stream, so its hooks (the access line, metrics) and request id headers
// apply as to any answer. A comment line every heartbeat keeps proxies that cut idle
// connections from cutting it. Back-pressure: send() resolves only once the client has
// taken what is queued, so the caller reads its next event no sooner, and a slow client
// makes the edge hold at most one event beyond the stream's buffer.

export const HEARTBEAT = ": keep-alive\n\n";

export class EventStream {
  // Writes after the client left are dropped (send and the heartbeat check closed first); an error then has no one to tell.
  readonly #body = new PassThrough().on("error", () => {});
  readonly #heartbeat: NodeJS.Timeout;
  #closed = false;
  /** Aborted when the client leaves before the end. */
  readonly left = new AbortController();

  /** Sends the head (with whatever headers the reply already has) and a first comment line at once. */
  constructor(reply: FastifyReply, heartbeatMs: number) {
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) this.left.abort();
      this.#stop();
    });
    reply
      .code(200)
      .header("content-type", "text/event-stream; charset=utf-8")
      // Never kept by a cache: each stream is one job's answer (the console answers no-store throughout).
      .header("cache-control", "no-store")
      // nginx and similar proxies pass the stream on as it comes instead of buffering it.
      .header("x-accel-buffering", "no")
      .send(this.#body);
    this.#body.write(HEARTBEAT);
    // A heartbeat only while nothing is waiting to go out: one waiting keeps the connection busy anyway.
    this.#heartbeat = setInterval(() => {
      if (!this.#closed && !this.#body.writableNeedDrain) this.#body.write(HEARTBEAT);
    }, heartbeatMs);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** One event: `event: <name>` and its JSON data; resolves once it is taken (or the client left). */
  async send(name: string, data: unknown): Promise<void> {
    if (this.#closed) return;
    if (this.#body.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)) return;
    await Promise.race([once(this.#body, "drain"), once(this.left.signal, "abort")]).catch(() => {});
  }

  end(): void {
    if (this.#closed) return;
    this.#stop();
    this.#body.end();
  }

  #stop(): void {
    this.#closed = true;
    clearInterval(this.#heartbeat);
  }
}
