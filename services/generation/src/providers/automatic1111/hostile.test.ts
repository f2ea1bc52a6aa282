import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { parseCatalog, type ChannelConfig } from "../../catalog.ts";
import { generateOnChannel, type UpstreamSettings } from "../upstream.ts";
import type { UpstreamProgress, UpstreamRequest } from "../types.ts";

// The automatic1111 adapter over real HTTP against a hostile A1111 (a local node:http
// server): what its GET /sdapi/v1/progress says reaches the job only as a fraction from 0 to 1.

const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: false, maxUpstreamBytes: 50 * 1024 * 1024 };
const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** An A1111 whose txt2img answers after 400 ms, and whose progress answers `progressText` meanwhile. */
async function hostileA1111(progressText: string): Promise<string> {
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png().toBuffer();
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url?.startsWith("/sdapi/v1/progress")) return res.writeHead(200, { "content-type": "application/json" }).end(progressText);
      if (req.url === "/sdapi/v1/txt2img") {
        setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ images: [png.toString("base64")], info: "{}" })), 400);
        return;
      }
      res.writeHead(404).end();
    });
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function channel(baseUrl: string): ChannelConfig {
  const catalog = parseCatalog({
    models: [{ id: "local", family: "beta", tiers: ["1K"], channels: [{ name: "gpu", provider: "automatic1111", baseUrl, capacity: 1, allowPrivateNetwork: true, pollIntervalMs: 20 }] }],
  });
  return catalog.get("local")!.channels[0]!;
}

describe("the automatic1111 adapter against a hostile A1111 (HTTP, a local node:http server)", () => {
  /** A job on an A1111 whose /progress always answers `progressJson`: its outcome and the progress passed on. */
  async function jobWithProgress(progressJson: string) {
    const progress: UpstreamProgress[] = [];
    const base = await hostileA1111(progressJson);
    const request: UpstreamRequest = { prompt: "a lighthouse", width: 64, height: 64, n: 1, quality: undefined };
    const outcome = await generateOnChannel(channel(base), undefined, request, AbortSignal.timeout(30_000), settings, undefined, (update) => progress.push(update));
    return { outcome, progress };
  }

  it("passes on no fraction from a progress of 1e999 (JSON for Infinity), which is not the job done", async () => {
    const { outcome, progress } = await jobWithProgress('{"progress":1e999,"state":{"job_count":1},"current_image":null}');
    expect(outcome.ok).toBe(true);
    expect(progress).toEqual([]);
  });

  it("passes on a progress over 1 as 1, once, however often it is polled", async () => {
    const { outcome, progress } = await jobWithProgress('{"progress":1.5,"state":{"job_count":1},"current_image":null}');
    expect(outcome.ok).toBe(true);
    expect(progress).toEqual([{ fraction: 1 }]);
  });
});
