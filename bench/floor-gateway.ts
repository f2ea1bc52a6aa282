// bench/floor-gateway.ts --upstream URL --database URL --data-dir DIR, run bundled as Orvado is (servers.ts benchBundle):
// the least a gateway in Orvado's place can do per image request, for `npm run bench:floor`.
// It has no auth, no prices, no validation, no logs: only node:http both ways and, on
// /durable, the durable steps on the answer's path, in Orvado's order
// (docs/architecture.md#what-waits-for-the-disk).
//
//   POST /forward/v1/images/generations  the request to the upstream, its answer back
//   POST /durable/v1/images/generations  a hold row committed before the upstream call
//                                        (step 2), the upstream's answer appended to a
//                                        file and fdatasync'd (step 4, the image stored),
//                                        an outcome row committed (step 4, `completed`),
//                                        then the answer (step 5)
//
// Prints BENCH_READY {"url": …} once listening.
import { randomUUID } from "node:crypto";
import { open } from "node:fs/promises";
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { readBody } from "./http-body.ts";
import { READY_MARKER } from "./processes.ts";
import { percentile } from "./stats.ts";

const { values } = parseArgs({ options: { upstream: { type: "string" }, database: { type: "string" }, "data-dir": { type: "string" } } });
if (!values.upstream || !values.database || !values["data-dir"]) throw new Error("--upstream, --database and --data-dir are required");
const upstream = new URL(values.upstream);

// Orvado's default PostgreSQL settings: synchronous_commit on, so each commit waits for the WAL flush.
const db = new pg.Client({ connectionString: values.database });
await db.connect();
await db.query(`CREATE TABLE IF NOT EXISTS floor_holds (request_id text PRIMARY KEY, held_at timestamptz NOT NULL DEFAULT now());
                CREATE TABLE IF NOT EXISTS floor_outcomes (request_id text PRIMARY KEY, bytes int NOT NULL, done_at timestamptz NOT NULL DEFAULT now())`);
// Written at offsets the gateway claims, as Orvado's segment files are (pwrite, then fdatasync).
const images = await open(join(values["data-dir"], "images.seg"), "w");
let imageOffset = 0;

const agent = new Agent({ keepAlive: true });

/** Each durable step's times (ms) since the last reset: GET /stats answers their medians, POST /stats answers them and clears them. */
const stepTimes = { holdCommit: [] as number[], upstreamCall: [] as number[], imageFlush: [] as number[], outcomeCommit: [] as number[] };
async function timed<T>(step: keyof typeof stepTimes, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  stepTimes[step].push(performance.now() - started);
  return result;
}
const median = (times: number[]) => (times.length === 0 ? null : percentile([...times].sort((a, b) => a - b), 50));
function stats(reset: boolean): Answer {
  const body = JSON.stringify({ p50Ms: Object.fromEntries(Object.entries(stepTimes).map(([step, times]) => [step, median(times)])), requests: stepTimes.holdCommit.length });
  if (reset) for (const times of Object.values(stepTimes)) times.length = 0;
  return { status: 200, body: Buffer.from(body) };
}

interface Answer {
  status: number;
  body: Buffer;
}

function forward(request: IncomingMessage, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        agent,
        host: upstream.hostname,
        port: upstream.port,
        method: "POST",
        path: `${upstream.pathname.replace(/\/$/, "")}/v1/images/generations`,
        headers: { "content-type": "application/json", authorization: request.headers.authorization ?? "", "content-length": body.length },
      },
      (answer) => readBody(answer).then((bytes) => resolve({ status: answer.statusCode ?? 502, body: bytes }), reject),
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

async function durably(request: IncomingMessage, body: Buffer): Promise<Answer> {
  const requestId = randomUUID();
  await timed("holdCommit", () => db.query({ name: "hold", text: "INSERT INTO floor_holds (request_id) VALUES ($1)", values: [requestId] }));
  const answer = await timed("upstreamCall", () => forward(request, body));
  if (answer.status !== 200) return answer;
  const position = imageOffset;
  imageOffset += answer.body.length;
  await timed("imageFlush", async () => {
    await images.write(answer.body, 0, answer.body.length, position);
    await images.datasync();
  });
  await timed("outcomeCommit", () =>
    db.query({ name: "outcome", text: "INSERT INTO floor_outcomes (request_id, bytes) VALUES ($1, $2)", values: [requestId, answer.body.length] }),
  );
  return answer;
}

async function serve(request: IncomingMessage, response: ServerResponse) {
  const body = await readBody(request);
  if (request.url === "/stats") return send(response, stats(request.method === "POST"));
  const route = request.url === "/forward/v1/images/generations" ? forward : request.url === "/durable/v1/images/generations" ? durably : null;
  const answer: Answer = route && request.method === "POST" ? await route(request, body) : { status: 404, body: Buffer.from('{"error":{"message":"not found"}}') };
  send(response, answer);
}

function send(response: ServerResponse, answer: Answer) {
  response.writeHead(answer.status, { "content-type": "application/json", "content-length": answer.body.length });
  response.end(answer.body);
}

const server = createServer((request, response) => {
  serve(request, response).catch((error: Error) => {
    process.stderr.write(`floor gateway: ${error.stack ?? error.message}\n`);
    if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { message: error.message } }));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address() as { port: number };
  process.stdout.write(`${READY_MARKER}${JSON.stringify({ url: `http://127.0.0.1:${address.port}`, pid: process.pid })}\n`);
});

const stop = async () => {
  server.close();
  await Promise.allSettled([db.end(), images.close()]);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
