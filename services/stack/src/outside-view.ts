import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { usdToMicros } from "@orvado/core";

// What an operator and a client can see of the money, without Orvado's tables:
// the `orvado` CLI run as its own process (bin/orvado.js, as operators run it),
// and the public HTTP API of the edge (cost lookup, job lookup, image files).

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export interface CliAnswer {
  code: number;
  // biome-ignore lint/suspicious/noExplicitAny: the CLI's JSON, whose fields the callers read and assert
  json: any;
  stderr: string;
}

/** `orvado <argv>` as a process, given the services' addresses and secret in its environment. */
export function orvadoCli(env: NodeJS.ProcessEnv, ...argv: string[]): Promise<CliAnswer> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["tools/cli/bin/orvado.js", ...argv], { cwd: ROOT, env: { PATH: process.env.PATH, ...env }, timeout: 180_000, maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, json: /^\s*[[{]/.test(stdout) ? JSON.parse(stdout) : null, stderr });
    });
  });
}

/** Micro-USD captured per request id, from `orvado ledger statement` (every entry of the account). */
export function capturesByRequest(statement: { entries: { kind: string; request_id: string; amount_usd: string }[] }): Map<string, bigint[]> {
  const captures = new Map<string, bigint[]>();
  for (const entry of statement.entries) {
    if (entry.kind !== "capture") continue;
    const micros = usdToMicros(entry.amount_usd);
    if (micros === null) throw new Error(`unreadable amount ${entry.amount_usd}`);
    captures.set(entry.request_id, [...(captures.get(entry.request_id) ?? []), micros]);
  }
  return captures;
}

export interface RequestSeen {
  /** The public cost record's status (pending, charged, not_charged), or null when it has none (404). */
  costStatus: string | null;
  amountMicros: bigint;
  imagesDelivered: number;
  /** The job lookup's HTTP status. */
  lookupStatus: number;
  /** Images the lookup links to that were fetched back with a body. */
  imagesReadBack: number;
}

/** One request as a client sees it: its cost record and, when the lookup returns images, those images fetched. */
export async function seeRequest(edge: string, apiKey: string, requestId: string): Promise<RequestSeen> {
  const cost = await fetch(`${edge}/api/cost/request/${requestId}`);
  const record = cost.status === 200 ? ((await cost.json()) as { status: string; amount_micros: number; images_delivered: number }) : null;
  if (cost.status !== 200 && cost.status !== 404) throw new Error(`cost lookup of ${requestId}: ${cost.status} ${await cost.text()}`);
  const lookup = await fetch(`${edge}/v1/images/generations/${requestId}`, { headers: { authorization: `Bearer ${apiKey}` } });
  let imagesReadBack = 0;
  if (lookup.status === 200) {
    const { data } = (await lookup.json()) as { data: { url: string }[] };
    for (const image of data) {
      const file = await fetch(image.url);
      if (file.status === 200 && (await file.arrayBuffer()).byteLength > 0) imagesReadBack += 1;
    }
  } else await lookup.body?.cancel();
  return {
    costStatus: record?.status ?? null,
    amountMicros: BigInt(record?.amount_micros ?? 0),
    imagesDelivered: record?.images_delivered ?? 0,
    lookupStatus: lookup.status,
    imagesReadBack,
  };
}
