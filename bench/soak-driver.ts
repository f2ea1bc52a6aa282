// The load drivers of `npm run bench:soak`: what sends the held requests. One
// driver runs in the soak's own process; more are forked (soak-driver-main.ts),
// because one process cannot hold more client sockets than its open-files limit.
// Every driver sends its share of the requests on the same ramp (request i starts
// at i/count × rampMs), spread over the edge processes round robin, and reports
// how many it has open; the parent sums them.
import { fork, type ChildProcess } from "node:child_process";
import { Agent, request as httpRequest } from "node:http";
import { fileURLToPath } from "node:url";
import { killOnExit, stopper } from "./processes.ts";
import { replicaName } from "../services/stack/src/process-stack.ts";

export interface Outcome {
  /** HTTP status, or the socket error's code when no answer came. */
  status: number | string;
  ms: number;
}

/** The whole soak's requests, whichever drivers send them. */
export interface SoakLoad {
  count: number;
  /** Request i starts i/count × rampMs after the first. */
  rampMs: number;
  /** The edge processes, spread over round robin. */
  edgeUrls: string[];
  /** Account keys: request i uses keys[i % keys.length]. */
  keys: string[];
  /** The JSON body of every request. */
  body: string;
}

/** One driver's part of a load: the requests i with i % drivers === driver. */
export interface DriverPlan extends SoakLoad {
  driver: number;
  drivers: number;
  /** Date.now() at which request 0 starts: the same instant in every driver process. */
  startAt: number;
}

/** What a forked driver tells its parent. */
export type DriverMessage = { type: "ready" } | { type: "open"; open: number } | { type: "done"; outcomes: Outcome[] };

/** How often a forked driver reports its open requests (the summed peak is sampled this often). */
export const OPEN_REPORT_MS = 250;

/** Time for a plan to reach every forked driver before the ramp starts, so none starts behind it. */
const PLAN_DELIVERY_MS = 200;

/** Loading TypeScript through tsx takes a second or two; far longer means the driver is stuck. */
const READY_TIMEOUT_MS = 60_000;

const DRIVER_MAIN = fileURLToPath(new URL("./soak-driver-main.ts", import.meta.url));

/** What a streamed answer's end is judged by: its completed event arrived (docs/api.md#streaming). */
const COMPLETED_EVENT = "event: image_generation.completed";

/**
 * One generation request on its own connection, as that many separate clients would.
 * A streamed answer is 200 from its head on: it counts as answered only when its
 * completed event came, else as "stream_error".
 */
function generate(agent: Agent, edgeUrl: string, key: string, body: string): Promise<Outcome> {
  const url = new URL(`${edgeUrl}/v1/images/generations`);
  const start = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers: { "content-type": "application/json", authorization: `Bearer ${key}` } },
      (res) => {
        const streamed = String(res.headers["content-type"] ?? "").startsWith("text/event-stream");
        let tail = "";
        let completed = false;
        res.setEncoding("latin1");
        res.on("data", (chunk: string) => {
          if (!streamed || completed) return;
          // The event's name may straddle two chunks: keep the end of the last one.
          tail = (tail + chunk).slice(-(chunk.length + COMPLETED_EVENT.length));
          completed = tail.includes(COMPLETED_EVENT);
          tail = tail.slice(-COMPLETED_EVENT.length);
        });
        res.on("end", () => resolve({ status: streamed && !completed ? "stream_error" : (res.statusCode ?? 0), ms: performance.now() - start }));
        res.on("error", (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message, ms: performance.now() - start }));
      },
    );
    req.setTimeout(15 * 60_000, () => req.destroy(new Error("timeout")));
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message, ms: performance.now() - start }));
    req.end(body);
  });
}

const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

/** The request numbers a driver sends: every drivers-th, from its own number on, so each driver ramps over the whole RAMP_MS. */
function shareOf(plan: DriverPlan): number[] {
  return Array.from({ length: Math.max(0, Math.ceil((plan.count - plan.driver) / plan.drivers)) }, (_, nth) => plan.driver + nth * plan.drivers);
}

/** Sends one driver's share of the requests and resolves with their outcomes; onOpen hears each change of its open count. */
export async function holdShare(plan: DriverPlan, onOpen: (open: number) => void): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let open = 0;
  return Promise.all(
    shareOf(plan).map(async (index, nth) => {
      await sleepUntil(plan.startAt + (index / plan.count) * plan.rampMs);
      open += 1;
      onOpen(open);
      // Round robin over the edges within each driver, offset per driver so that no edge gets every driver's first request.
      const edgeUrl = plan.edgeUrls[(plan.driver + nth) % plan.edgeUrls.length]!;
      const outcome = await generate(agent, edgeUrl, plan.keys[index % plan.keys.length]!, plan.body);
      open -= 1;
      onOpen(open);
      return outcome;
    }),
  );
}

/** The requests open at once over all drivers: each one's latest count, and the peak of their sum. */
export class OpenRequests {
  readonly #byDriver: number[];
  #peak = 0;

  constructor(drivers: number) {
    this.#byDriver = new Array<number>(drivers).fill(0);
  }

  set(driver: number, open: number) {
    this.#byDriver[driver] = open;
    this.#peak = Math.max(this.#peak, this.now());
  }

  now(): number {
    return this.#byDriver.reduce((sum, open) => sum + open, 0);
  }

  /** Exact with one driver; with several, the peak of the sums seen at their reports (OPEN_REPORT_MS apart). */
  peak(): number {
    return this.#peak;
  }
}

export interface Drivers {
  /** Each driver's process (this process when it drives alone), to sample its descriptors. */
  processes: { name: string; pid: number }[];
  open: OpenRequests;
  /** Sends every request of the load and resolves with all their outcomes. */
  hold(load: SoakLoad): Promise<Outcome[]>;
  stop(): Promise<void>;
}

/** Resolves with a driver's next message of this type; rejects if it exits first, or after timeoutMs if given. */
function nextMessage<T extends DriverMessage["type"]>(child: ChildProcess, type: T, name: string, timeoutMs?: number): Promise<Extract<DriverMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => settle(new Error(`${name} did not report "${type}" within ${timeoutMs} ms`)), timeoutMs);
    const settle = (outcome: Error | Extract<DriverMessage, { type: T }>) => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onMessage = (message: DriverMessage) => {
      if (message.type === type) settle(message as Extract<DriverMessage, { type: T }>);
    };
    const onExit = (code: number | null, signal: string | null) => settle(new Error(`${name} exited (code ${code}, signal ${signal}) before it reported "${type}"`));
    child.on("message", onMessage);
    child.on("exit", onExit);
  });
}

function inProcessDriver(): Drivers {
  const open = new OpenRequests(1);
  return {
    processes: [{ name: "driver", pid: process.pid }],
    open,
    hold: (load) => holdShare({ ...load, driver: 0, drivers: 1, startAt: Date.now() }, (count) => open.set(0, count)),
    stop: async () => {},
  };
}

async function forkedDrivers(count: number): Promise<Drivers> {
  // With this process's Node flags: they load TypeScript (--import tsx).
  const children = Array.from({ length: count }, () => fork(DRIVER_MAIN, [], { execArgv: process.execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] }));
  children.forEach(killOnExit);
  const stop = async () => {
    await Promise.all(children.map((child) => stopper(child)(5_000)));
  };
  const names = children.map((_, index) => replicaName("driver", index + 1));
  try {
    await Promise.all(children.map((child, index) => nextMessage(child, "ready", names[index]!, READY_TIMEOUT_MS)));
  } catch (error) {
    await stop();
    throw error;
  }
  const open = new OpenRequests(count);
  return {
    processes: children.map((child, index) => ({ name: names[index]!, pid: child.pid! })),
    open,
    async hold(load) {
      const startAt = Date.now() + PLAN_DELIVERY_MS;
      const shares = children.map((child, driver) => {
        const onOpen = (message: DriverMessage) => {
          if (message.type === "open") open.set(driver, message.open);
        };
        child.on("message", onOpen);
        const done = nextMessage(child, "done", names[driver]!).finally(() => child.off("message", onOpen));
        child.send({ ...load, driver, drivers: count, startAt } satisfies DriverPlan);
        return done;
      });
      return (await Promise.all(shares)).flatMap((message) => message.outcomes);
    },
    stop,
  };
}

/** count drivers ready to send: this process alone for one, else that many forked processes. */
export function startDrivers(count: number): Promise<Drivers> {
  return count === 1 ? Promise.resolve(inProcessDriver()) : forkedDrivers(count);
}
