import { startFakeUpstream } from "./fake-upstream.ts";
import { fitToSize } from "../services/generation/src/providers/fit.ts";
import { guardedFetch } from "../services/generation/src/providers/guarded-fetch.ts";
const up = await startFakeUpstream();
const body = JSON.stringify({ model: "gpt-image-1", prompt: "x", n: 1, size: "1024x1024", response_format: "b64_json" });
async function time(label: string, fn: () => Promise<unknown>) {
  for (let i = 0; i < 50; i++) await fn();
  const n = 1000; const cpu0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  const dt = performance.now() - t0; const cpu = process.cpuUsage(cpu0);
  console.log(label.padEnd(20), (dt / n * 1000).toFixed(0), "us wall,", ((cpu.user + cpu.system) / n).toFixed(0), "us cpu");
}
const post = (f: typeof fetch) => async () => { const r = await f(`${up.url}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json" }, body }); return r.json(); };
await time("plain fetch", post(fetch));
const g = guardedFetch({ provider: "openai-compatible", baseUrl: `${up.url}/v1`, allowPrivateNetwork: true, maxResponseBytes: 50e6, onRefusal: () => {} } as any);
await time("guarded fetch", post(g));
const json: any = await post(fetch)();
const png = Buffer.from(json.data[0].b64_json, "base64");
await time("fitToSize", () => fitToSize(png, 1024, 1024));
await up.close(); process.exit(0);
