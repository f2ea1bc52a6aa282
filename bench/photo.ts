// `npm run bench:photo`: Orvado answering photo-sized images. The fake upstream
// answers noise PNGs as large as a photo's (bench/fake-upstream.ts "photo": about
// 3.3 MB at 1024x1024, 13 MB at 2048x2048, 27 MB at 4096x4096); for each size and
// response_format a fresh Orvado process (all four services in one, as npm run
// bench) takes a closed-loop load (bench/photo-load.ts) while its RSS is sampled.
// Prints one table and writes bench/results/photo-<time>.json.
//
// A url answer is measured as the POST only (the image stored, the link
// returned); the client's download of the link is not part of it.
//
// Environment: BENCH_PHOTO_SIZES (default "1024,2048,4096": square sides),
// BENCH_PHOTO_FORMATS (default "url,b64_json"), BENCH_PHOTO_OUTPUTS (default "png": the client's
// output_format, a list; "webp" or "jpeg" puts sharp on every answer's path, decoding the upstream's
// PNG and encoding it again), BENCH_PHOTO_CONNECTIONS (default "100"; a list,
// e.g. "1,10,100", measures each size and format at each),
// BENCH_DURATION_S (per cell, default 8; requests still open then are let finish),
// BENCH_PHOTO_RSS_LIMIT_MIB (default 12288: once Orvado's RSS passes it the cell is cut,
// its open requests closed, so a shared machine is not driven out of memory; the row says so).
import { cpus, loadavg, release, totalmem } from "node:os";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { RESULTS_DIR, clearChildLogs, fakeUpstreamChannel, startOrvado, startUpstream, writeCatalogFile } from "./servers.ts";
import { watchPeakRss } from "./processes.ts";
import { startPhotoLoad, type PhotoLoadResult } from "./photo-load.ts";
import { fixed, formatTable, mib, since } from "./stats.ts";

const SIZES = (process.env.BENCH_PHOTO_SIZES ?? "1024,2048,4096").split(",").map(Number);
const FORMATS = (process.env.BENCH_PHOTO_FORMATS ?? "url,b64_json").split(",") as ("url" | "b64_json")[];
const OUTPUTS = (process.env.BENCH_PHOTO_OUTPUTS ?? "png").split(",") as ("png" | "webp" | "jpeg")[];
const CONNECTIONS = (process.env.BENCH_PHOTO_CONNECTIONS ?? "100").split(",").map(Number);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const RSS_LIMIT_BYTES = Number(process.env.BENCH_PHOTO_RSS_LIMIT_MIB ?? 12_288) * 1024 * 1024;
// A 4096x4096 answer queued behind 99 others on a small machine takes long; a timeout is an error in the table.
const REQUEST_TIMEOUT_MS = 300_000;
// config/prices.json prices this model at all three tiers (the bench's usual "beta" has no 4K).
const PHOTO_MODEL = "beta-2.1";
const started = Date.now();
const log = (message: string) => process.stderr.write(`[bench:photo ${since(started)}] ${message}\n`);

/** One model at every tier, one openai-compatible channel at the fake upstream (which answers the exact size asked). */
function writePhotoCatalog(upstreamUrl: string): string {
  const channel = fakeUpstreamChannel(upstreamUrl, 100_000, { timeoutMs: REQUEST_TIMEOUT_MS });
  return writeCatalogFile([{ id: PHOTO_MODEL, family: "beta", tiers: ["1K", "2K", "4K"], channels: [channel] }], "photo-models");
}

interface Cell {
  side: number;
  format: "url" | "b64_json";
  /** The client's output_format: png is stored as the upstream sent it; webp and jpeg are encoded by sharp. */
  output: "png" | "webp" | "jpeg";
  /** The upstream's PNG for this size. */
  imageBytes: number;
  idleRssBytes: number;
  peakRssBytes: number;
  load: PhotoLoadResult;
}

async function upstreamImageBytes(upstreamUrl: string, side: number): Promise<number> {
  const response = await fetch(`${upstreamUrl}/files/${side}x${side}.png`);
  return (await response.arrayBuffer()).byteLength;
}

/** A fresh Orvado per cell, so each peak is that cell's alone (RSS a process once took is seldom given back). */
async function measureCell(catalog: string, side: number, format: Cell["format"], output: Cell["output"], connections: number, imageBytes: number): Promise<Cell> {
  const orvado = await startOrvado({ modelsFile: catalog, env: { BENCH_LOG_LEVEL: "warn" } });
  try {
    const body = JSON.stringify({ model: PHOTO_MODEL, prompt: "a harbour at dawn, photograph", size: `${side}x${side}`, response_format: format, ...(output !== "png" && { output_format: output }) });
    const rss = watchPeakRss([orvado.info.pid], 100);
    const idleRssBytes = rss.current();
    const load = startPhotoLoad({ url: `${orvado.info.edgeUrl}/v1/images/generations`, headers: { authorization: `Bearer ${orvado.info.key}` }, body, connections, durationS: DURATION_S, timeoutMs: REQUEST_TIMEOUT_MS });
    const guard = setInterval(() => {
      if (rss.current() > RSS_LIMIT_BYTES) {
        log(`${side}² ${format} ${output} c=${connections}: Orvado RSS ${mib(rss.current())} passed the limit; cutting the cell`);
        load.stop();
      }
    }, 100);
    const result = await load.done;
    clearInterval(guard);
    const peakRssBytes = rss.stop();
    log(`${side}² ${format} ${output} c=${connections}: ${fixed(result.rps, 1)} answers/s, p99 ${fixed(result.p99Ms, 0)} ms, errors ${result.errors}, peak RSS ${mib(peakRssBytes)} (idle ${mib(idleRssBytes)})`);
    return { side, format, output, imageBytes, idleRssBytes, peakRssBytes, load: result };
  } finally {
    await orvado.stop();
  }
}

const mb = (bytes: number) => `${fixed(bytes / 1e6, 1)}`;

/** RSS above idle per connection: what one concurrent answer holds in memory at the peak. */
function rssPerConnection(cell: Cell): number {
  return (cell.peakRssBytes - cell.idleRssBytes) / cell.load.connections;
}

/** The bytes one answer carries: the base64 JSON for b64_json, the stored PNG for url (its POST answer is only a link). */
function answerPayloadBytes(cell: Cell): number {
  return cell.format === "b64_json" ? cell.load.meanAnswerBytes : cell.imageBytes;
}

function report(cells: Cell[]): string {
  const rows: (string | number)[][] = [["size", "format", "output", "c", "image MB", "answer MB", "answers/s", "p50 ms", "p99 ms", "errors", "answers", "idle RSS", "peak RSS", "(peak − idle) ÷ c, MB", "÷ payload"]];
  for (const c of cells) {
    const cut = c.load.stopped ? " (RSS limit)" : "";
    rows.push([`${c.side}x${c.side}`, c.format + cut, c.output, c.load.connections, mb(c.imageBytes), mb(c.load.meanAnswerBytes), fixed(c.load.rps, 1), fixed(c.load.p50Ms, 0), fixed(c.load.p99Ms, 0), c.load.errors, c.load.answers, mib(c.idleRssBytes), mib(c.peakRssBytes), mb(rssPerConnection(c)), fixed(rssPerConnection(c) / Math.max(1, answerPayloadBytes(c)), 1)]);
  }
  return [formatTable(rows), "payload: the base64 answer for b64_json, the upstream's PNG for url (stored, then linked; with output webp or jpeg, encoded again first)"].join("\n");
}

async function main() {
  const loadAverageAtStart = loadavg();
  clearChildLogs();
  const upstream = await startUpstream(0, "photo");
  try {
    const catalog = writePhotoCatalog(upstream.info.url);
    const cells: Cell[] = [];
    for (const side of SIZES) {
      // Also renders the upstream's PNG for this size once, before any cell is timed.
      const imageBytes = await upstreamImageBytes(upstream.info.url, side);
      for (const format of FORMATS) {
        for (const output of OUTPUTS) for (const connections of CONNECTIONS) cells.push(await measureCell(catalog, side, format, output, connections, imageBytes));
      }
    }
    const loadAverageAtEnd = loadavg();
    process.stdout.write(
      `\n${report(cells)}\n${DURATION_S} s of sending per cell (open requests then finish); ` +
        `load average (1 min) at start ${fixed(loadAverageAtStart[0]!)}, at end ${fixed(loadAverageAtEnd[0]!)} on ${cpus().length} CPUs\n\n`,
    );
    const file = join(RESULTS_DIR, `photo-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryBytes: totalmem(), node: process.version, kernel: release(), loadAverageAtStart, loadAverageAtEnd };
    const settings = { sizes: SIZES, formats: FORMATS, outputs: OUTPUTS, connections: CONNECTIONS, durationS: DURATION_S, rssLimitBytes: RSS_LIMIT_BYTES, model: PHOTO_MODEL };
    writeFileSync(file, JSON.stringify({ when: new Date().toISOString(), machine, settings, cells: cells.map((c) => ({ ...c, rssAboveIdlePerConnectionBytes: rssPerConnection(c), payloadBytes: answerPayloadBytes(c) })) }, null, 2));
    log(`wrote ${file}`);
  } finally {
    await upstream.stop();
  }
}

await main();
