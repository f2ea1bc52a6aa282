import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startSimulator, type Simulator } from "@orvado/simulators";
import { parseCatalog } from "../catalog.ts";
import { generateOnChannel } from "./upstream.ts";
import { guardedFetch } from "./guarded-fetch.ts";
import { isInternalAddress } from "./private-address.ts";

// The gateway's own rules for upstream traffic: SSRF checks on URLs an upstream hands
// back, a byte limit on every answer, and credentials kept to the channel's own site.

let fal: Simulator;
let compatible: Simulator;
const KEY = "fal-key-0123456789";

beforeAll(async () => {
  fal = await startSimulator("fal");
  compatible = await startSimulator("openai-compatible", { answerWithUrls: true });
});
afterAll(async () => {
  await fal.close();
  await compatible.close();
});

const channel = (provider: "fal" | "openai-compatible", baseUrl: string, allowPrivateNetwork?: boolean) =>
  parseCatalog({
    models: [{ id: "beta", family: "beta", tiers: ["1K"], channels: [{ name: "c", provider, upstreamModel: "m", baseUrl, apiKeyEnv: "K", capacity: 1, allowPrivateNetwork }] }],
  }).get("beta")!.channels[0]!;

const request = { prompt: "a fox", width: 1024, height: 1024, n: 1, quality: undefined };
const settings = { jobTimeoutMs: 60_000, allowPrivateUpstreams: false, maxUpstreamBytes: 50 * 1024 * 1024 };

describe("SSRF protection", () => {
  it("refuses to download a result image from a loopback address unless the channel allows it", async () => {
    const downloads = fal.count("download");
    const outcome = await generateOnChannel(channel("fal", fal.baseUrl), KEY, request, AbortSignal.timeout(10_000), settings);
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
    expect(outcome.ok ? "" : outcome.detail).toMatch(/internal address 127\.0\.0\.1/);
    expect(fal.count("download")).toBe(downloads);
  });

  it("downloads it when the channel opts in with allowPrivateNetwork", async () => {
    const outcome = await generateOnChannel(channel("fal", fal.baseUrl, true), KEY, request, AbortSignal.timeout(10_000), settings);
    expect(outcome.ok).toBe(true);
  });

  it("downloads it when the service opts in with GENERATION_ALLOW_PRIVATE_UPSTREAMS", async () => {
    const outcome = await generateOnChannel(channel("fal", fal.baseUrl), KEY, request, AbortSignal.timeout(10_000), { ...settings, allowPrivateUpstreams: true });
    expect(outcome.ok).toBe(true);
  });

  it("applies to an OpenAI-compatible server that answers with URLs too", async () => {
    const blocked = await generateOnChannel(channel("openai-compatible", compatible.baseUrl), KEY, request, AbortSignal.timeout(10_000), settings);
    expect(blocked).toMatchObject({ ok: false, kind: "failed" });
    const allowed = await generateOnChannel(channel("openai-compatible", compatible.baseUrl, true), KEY, request, AbortSignal.timeout(10_000), settings);
    expect(allowed.ok).toBe(true);
  });

  it("classifies internal and public addresses", () => {
    for (const address of ["127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "100.64.0.1"]) {
      expect(isInternalAddress(address), address).toBe(true);
    }
    for (const address of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect(isInternalAddress(address), address).toBe(false);
    }
  });
});

describe("the byte limit", () => {
  it("fails an answer larger than GENERATION_MAX_UPSTREAM_BYTES", async () => {
    const outcome = await generateOnChannel(channel("fal", fal.baseUrl, true), KEY, request, AbortSignal.timeout(10_000), { ...settings, maxUpstreamBytes: 2048 });
    expect(outcome).toMatchObject({ ok: false, kind: "failed" });
    expect(outcome.ok ? "" : outcome.detail).toMatch(/limit/);
  });
});

describe("credentials", () => {
  let echo: Server;
  let seen: Record<string, string | string[] | undefined>[] = [];
  beforeAll(async () => {
    echo = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { "content-type": "image/png" });
      res.end("x");
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())));

  it("are sent to the channel's own host and never to another host", async () => {
    const port = (echo.address() as AddressInfo).port;
    const fetch = guardedFetch({ provider: "fal", baseUrl: `http://127.0.0.1:${port}/api`, allowPrivateNetwork: true, maxResponseBytes: 1024, onRefusal() {} });
    seen = [];
    await fetch(`http://127.0.0.1:${port}/api/run`, { headers: { authorization: "Key secret" } });
    await fetch(`http://localhost:${port}/cdn/file.png`, { headers: { authorization: "Key secret", "x-key": "secret" } });
    expect(seen).toHaveLength(2);
    expect(seen[0]!.authorization).toBe("Key secret");
    expect(seen[1]!.authorization).toBeUndefined();
    expect(seen[1]!["x-key"]).toBeUndefined();
  });
});

describe("requests to the channel's own API", () => {
  // A server that echoes what it received: method, body, length header, transfer encoding.
  let echo: Server;
  let base: string;
  beforeAll(async () => {
    echo = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ method: req.method, length: req.headers["content-length"] ?? null, chunked: req.headers["transfer-encoding"] ?? null, contentType: req.headers["content-type"] ?? null, body: Buffer.concat(chunks).toString() }));
      });
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())));

  const guarded = () => guardedFetch({ provider: "openai-compatible", baseUrl: base, allowPrivateNetwork: false, maxResponseBytes: 1024 * 1024, onRefusal: () => {} });

  it("sends a JSON body whole, with its length (not chunked), and reads the answer", async () => {
    const body = JSON.stringify({ prompt: "a fox", n: 1 });
    const response = await guarded()(`${base}/images/generations`, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ method: "POST", length: String(Buffer.byteLength(body)), chunked: null, contentType: "application/json", body });
  });

  it("still sends bodies node:http cannot take as they are (form data) through fetch", async () => {
    const form = new FormData();
    form.append("prompt", "a fox");
    const response = await guarded()(`${base}/images/edits`, { method: "POST", body: form });
    const echoed = (await response.json()) as { contentType: string; body: string };
    expect(echoed.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(echoed.body).toContain("a fox");
  });

  it("stops a call when its signal aborts", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(guarded()(`${base}/images/generations`, { method: "POST", body: "{}", signal: controller.signal })).rejects.toMatchObject({ name: "AbortError" });
  });
});
