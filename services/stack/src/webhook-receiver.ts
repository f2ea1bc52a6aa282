import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

// A webhook receiver for the tests: node:http on 127.0.0.1, recording every request
// it gets, answering with the status a test chooses per path (or holding it unanswered).

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Answer = number | "hold";

export class WebhookReceiver {
  readonly received: Received[] = [];
  /** The status each path answers with (default 200); "hold" never answers. */
  readonly answers = new Map<string, Answer>();
  private readonly held = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const path = request.url ?? "/";
        receiver.received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() });
        const answer = receiver.answers.get(path) ?? 200;
        if (answer === "hold") {
          receiver.held.add(() => response.destroy());
          return;
        }
        response.writeHead(answer, { "content-type": "text/plain" }).end("ok");
      });
    });
    return receiver;
  }

  on(path: string): Received[] {
    return this.received.filter((entry) => entry.path === path);
  }

  /** Waits until `path` got at least `count` requests. */
  async waitFor(path: string, count: number, timeoutMs = 30_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.on(path).length < count) {
      if (Date.now() > deadline) throw new Error(`${path} got ${this.on(path).length} of ${count} webhooks`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return this.on(path);
  }

  async close(): Promise<void> {
    for (const drop of this.held) drop();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The body as the receiver verified it with standardwebhooks (throws on a bad signature or stale timestamp). */
// biome-ignore lint/suspicious/noExplicitAny: the tests read the body's fields, whose shape each asserts
export function verified(secret: string, received: Received): any {
  const headers = {
    "webhook-id": String(received.headers["webhook-id"]),
    "webhook-timestamp": String(received.headers["webhook-timestamp"]),
    "webhook-signature": String(received.headers["webhook-signature"]),
  };
  return new Webhook(secret).verify(received.body, headers);
}
