import { afterEach, describe, expect, it } from "vitest";
import Fastify from "fastify";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger } from "@orvado/core";
import { GenerationService } from "@orvado/proto";
import { internalClient, startRpcServer, type InternalTransport, type RpcServer } from "@orvado/rpc";
import { fileRoutes } from "./files.ts";

// GET /v1/files over real HTTP, the edge reading generation's ReadImage over real RPC
// (in process, and Connect over loopback HTTP/2): a client that leaves mid-download
// ends the ReadImage call, so generation closes the image's file.

const SECRET = "s".repeat(32);
const CHUNK = new Uint8Array(64 * 1024).fill(7);
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A ReadImage that streams a file of 64 MiB, its content type after `delayMs`; `seen.closed` says its finally ran. */
async function generationStandIn(seen: { closed?: boolean; aborted?: boolean; sent: number }, delayMs = 0): Promise<RpcServer> {
  const server = await startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: SECRET,
    serviceNames: ["orvado.v1.GenerationService"],
    logger: createLogger("test", "silent"),
    routes: (router) =>
      router.service(GenerationService, {
        async *readImage(_request, context) {
          seen.closed = false;
          context.signal.addEventListener("abort", () => (seen.aborted = true));
          try {
            await new Promise((resolve) => setTimeout(resolve, delayMs));
            yield { contentType: "image/png" };
            for (let index = 0; index < 1024; index += 1) {
              seen.sent += 1;
              yield { chunk: CHUNK };
            }
          } finally {
            seen.closed = true;
          }
        },
      }),
  });
  closers.push(() => server.close());
  return server;
}

async function edge(transport: InternalTransport, rpc: RpcServer): Promise<string> {
  const app = Fastify();
  fileRoutes(app, { generation: internalClient(GenerationService, rpc.url, SECRET, { transport }) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  closers.push(() => app.close());
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** Starts the download, reads its first bytes, then drops the connection. */
function downloadAndLeave(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, (response) => {
      response.once("data", () => {
        req.destroy();
        resolve(response.statusCode ?? 0);
      });
    });
    req.on("error", (error) => (req.destroyed ? undefined : reject(error)));
    req.end();
  });
}

/** Sends the request and drops the connection before any answer. */
function requestAndLeave(url: string, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(url);
    req.on("error", () => undefined);
    req.end(() => setTimeout(() => resolve(void req.destroy()), afterMs));
  });
}

describe.each<InternalTransport>(["colocated", "http2"])("GET /v1/files over HTTP, ReadImage over the %s transport", (transport) => {
  it("ends the ReadImage stream when the client leaves mid-download", async () => {
    const seen: { closed?: boolean; aborted?: boolean; sent: number } = { sent: 0 };
    const base = await edge(transport, await generationStandIn(seen));
    const status = await downloadAndLeave(`${base}/v1/files/img_0123456789abcdef.png?expires=9999999999&sig=x`);
    expect(status).toBe(200);
    // The call ended on generation's side: its handler's signal aborted (ReadImage closes its file on it).
    await expect.poll(() => seen.aborted, { timeout: 5_000 }).toBe(true);
    // In process the handler's own finally runs too (Connect's HTTP/2 server leaves a suspended handler to the collector).
    if (transport === "colocated") await expect.poll(() => seen.closed, { timeout: 5_000 }).toBe(true);
    // The stand-in stopped well before its end: the download was cut, not finished.
    expect(seen.sent).toBeLessThan(1024);
  });

  it("streams a whole download to its end", async () => {
    const seen: { closed?: boolean; aborted?: boolean; sent: number } = { sent: 0 };
    const base = await edge(transport, await generationStandIn(seen));
    const response = await fetch(`${base}/v1/files/img_0123456789abcdef.png?expires=9999999999&sig=x`);
    expect(response.headers.get("content-type")).toBe("image/png");
    expect((await response.arrayBuffer()).byteLength).toBe(1024 * CHUNK.length);
    expect(seen.sent).toBe(1024);
  });

  it("ends the ReadImage stream when the client left before its first bytes", async () => {
    const seen: { closed?: boolean; aborted?: boolean; sent: number } = { sent: 0 };
    const base = await edge(transport, await generationStandIn(seen, 300));
    await requestAndLeave(`${base}/v1/files/img_0123456789abcdef.png?expires=9999999999&sig=x`, 50);
    await expect.poll(() => seen.aborted, { timeout: 5_000 }).toBe(true);
    expect(seen.sent).toBeLessThan(1024);
  });
});
