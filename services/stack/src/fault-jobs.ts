import type { ImageStore } from "@orvado/generation";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import type { ProcessStack } from "./process-stack.ts";

// The client side of the fault tests (fault-suite.ts, faults-three-brokers.kafka.test.ts):
// jobs sent to the edges over real HTTP, each retried on "try again" answers as SDKs do,
// every attempt kept as an outcome of its own.

export interface ClientOutcome {
  index: number;
  /** "refused": no connection could be opened (nothing was sent); "no_response": cut after sending. */
  status: number | "no_response" | "refused";
  requestId: string | null;
  code?: string;
  sentAt: number;
  answeredAt: number;
}

/** Answers a client sends again after a pause: nothing done, try again. */
export const RETRIED = new Set<ClientOutcome["status"]>(["no_response", "refused", 429, 503]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One client request to one edge; a dead edge or a cut connection is an outcome, not an error. */
export async function sendFaultJob(edge: string, apiKey: string, index: number, random: () => number): Promise<ClientOutcome> {
  const roll = random();
  const directive = roll < 0.08 ? "[sandbox:fail]" : roll < 0.12 ? "[sandbox:refuse]" : `[sandbox:delay=${Math.floor(random() * 1500)}]`;
  const sentAt = Date.now();
  try {
    const response = await fetch(`${edge}/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta-2-lite", prompt: `fault job ${index} ${directive}`, size: "256x256" }),
      signal: AbortSignal.timeout(60_000),
    });
    const body = (await response.json().catch(() => null)) as { error?: { code?: string } } | null;
    return { index, status: response.status, requestId: response.headers.get("x-request-id"), code: body?.error?.code, sentAt, answeredAt: Date.now() };
  } catch (error) {
    const refused = ((error as { cause?: { code?: string } }).cause?.code ?? "") === "ECONNREFUSED";
    return { index, status: refused ? "refused" : "no_response", requestId: null, sentAt, answeredAt: Date.now() };
  }
}

export interface FaultJobsOptions {
  jobs: number;
  concurrency: number;
  /** The edges to send to, asked at each attempt. */
  edges: () => string[];
  send: (index: number, edge: string) => Promise<ClientOutcome>;
  /** Several edges: a refused connection goes straight to the next one, as a load balancer would. */
  balanced: boolean;
  /** Go on past `jobs` while this says so (a fault schedule still running). */
  keepGoing?: () => boolean;
}

/**
 * Each job is sent until it gets an answer other than "try again": a refused
 * connection, a 429 or a 503 is retried after a pause, as SDKs do (the account's
 * concurrent-job limit is reached while a killed process's leases wait to expire). Every attempt is
 * kept, since each may have reached the edge and become a request of its own.
 */
export async function runFaultJobs(options: FaultJobsOptions): Promise<ClientOutcome[]> {
  const outcomes: ClientOutcome[] = [];
  let next = 0;
  const more = () => next < options.jobs || (options.keepGoing?.() ?? false);
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (more()) {
        const index = next++;
        for (let attempt = 0; attempt < 60; attempt++) {
          const all = options.edges();
          const outcome = await options.send(index, all[(index + attempt) % all.length]!);
          outcomes.push(outcome);
          if (!RETRIED.has(outcome.status)) break;
          if (!(options.balanced && outcome.status === "refused")) await sleep(300);
        }
      }
    }),
  );
  return outcomes;
}

/** How many answers of each status (and error code), for the one-line summary. */
export function outcomeCounts(outcomes: ClientOutcome[]): Record<string, number> {
  return outcomes.reduce<Record<string, number>>((acc, o) => {
    const label = o.code ? `${o.status} ${o.code}` : String(o.status);
    acc[label] = (acc[label] ?? 0) + 1;
    return acc;
  }, {});
}

/** How many bytes the store reads back for the image; null when it has none. */
export async function storedLength(store: ImageStore, imageId: string): Promise<number | null> {
  const opened = await store.open(imageId);
  if (opened === null) return null;
  let length = 0;
  for await (const chunk of opened.stream) length += (chunk as Buffer).length;
  return length;
}

/**
 * The services' timings in a fault run: short enough that the sweepers finish inside the test,
 * longer than a job (the hold-expiry rule of docs/architecture.md#the-money-model).
 */
export const FAULT_SWEEP_ENV: NodeJS.ProcessEnv = {
  GENERATION_JOB_TIMEOUT_MS: "5000",
  BILLING_HOLD_TTL_MS: "8000",
  BILLING_SWEEP_INTERVAL_MS: "500",
  GENERATION_ORPHAN_GRACE_MS: "2000",
};

/** Keeps the first lines each service complained with (five each), to explain a failure. */
export function firstComplaints(into: string[]): (service: string, line: string) => void {
  return (service, line) => {
    if (into.filter((warning) => warning.startsWith(`${service}:`)).length < 5) into.push(`${service}: ${line.slice(0, 400)}`);
  };
}

/** An account of the fault run's own, topped up through billing, and a key of it (over Connect RPC to the services). */
export async function fundFaultAccount(
  stack: ProcessStack,
  account: { email: string; topUpMicros: bigint; note: string; topUpId: string },
): Promise<{ accountId: string; apiKey: string }> {
  const auth = internalClient(AuthService, stack.url("auth"), stack.secret);
  const billing = internalClient(BillingService, stack.url("billing"), stack.secret);
  const created = await auth.createAccount({ email: account.email, password: "fault-password-1", role: 1 });
  const accountId = created.account!.accountId;
  await billing.topUp({ accountId, amountMicros: account.topUpMicros, note: account.note, topUpId: account.topUpId });
  return { accountId, apiKey: (await auth.createKey({ accountId, name: account.email.split("@")[0]! })).secret };
}
