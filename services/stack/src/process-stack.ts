// The four services as separate OS processes, as production runs them, for the
// fault-injection test and benchmarks: each can be killed (-9) and restarted on
// the same port while the others keep running.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { canListen } from "@orvado/core";
import { BUNDLED_SERVICES, buildServicesOnce, bundlePath, type BundledService } from "./build-services.ts";
import { SERVICE_NODE_FLAGS } from "./node-flags.ts";

/** The services in dependency order: each one's peers are up before it starts. */
export const SERVICE_NAMES = BUNDLED_SERVICES;
export type ServiceName = BundledService;

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const READY_TIMEOUT_MS = 60_000;

/** Where Linux picks the source ports of outgoing connections (net.ipv4.ip_local_port_range). */
export async function ephemeralPortRange(): Promise<[number, number]> {
  const text = await readFile("/proc/sys/net/ipv4/ip_local_port_range", "utf8").catch(() => "32768 60999");
  const [low, high] = text.trim().split(/\s+/).map(Number);
  return [low ?? 32768, high ?? 60999];
}


/**
 * A free port below the ephemeral range; services then bind it themselves, and
 * again after a restart. Why not the range: while a killed service is down, any
 * outgoing connection on the machine (a database pool's, say) may be given its
 * port as a source port and keep it, and the restart then fails EADDRINUSE.
 * Test files run at once in several vitest workers, each starting stacks: a port
 * free when checked could be picked by two of them, and the second service to bind
 * it failed to start. So each worker (VITEST_POOL_ID) picks from a share of its own,
 * and no port is handed out twice by one process.
 */
export async function freePort(): Promise<number> {
  const [low] = await ephemeralPortRange();
  const floor = Math.max(1024, low - 12_000);
  const share = Math.floor((low - floor) / PORT_SHARES);
  const pool = Number(process.env.VITEST_POOL_ID);
  const inWorker = Number.isSafeInteger(pool) && pool > 0;
  const start = inWorker ? floor + (pool % PORT_SHARES) * share : floor;
  const size = inWorker ? share : low - floor;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = start + Math.floor(Math.random() * size);
    if (HANDED_OUT.has(port)) continue;
    // Taken before the check, so that calls made at once never pick the same port.
    HANDED_OUT.add(port);
    if (await canListen(port)) return port;
    HANDED_OUT.delete(port);
  }
  throw new Error(`no free port between ${start} and ${start + size - 1}`);
}

/** Vitest workers each pick from one of this many shares of the range. */
const PORT_SHARES = 16;
const HANDED_OUT = new Set<number>();

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
}

export interface ProcessStackOptions {
  databaseUrl: string;
  dataDir: string;
  /** Extra environment for every service (hold TTLs, sweep intervals, …). */
  env?: NodeJS.ProcessEnv;
  /** Extra environment for one service's processes only, over `env`. */
  serviceEnv?: Partial<Record<ServiceName, NodeJS.ProcessEnv>>;
  /** Called with each line a service prints on stderr, and on stdout lines at warn level or above. */
  onLog?: (service: ServiceName, line: string) => void;
  /**
   * Processes each service starts with (default 1); every caller is given the
   * URLs of all of a service's replicas (a comma-separated ORVADO_*_URL).
   */
  replicas?: Partial<Record<ServiceName, number>>;
  /** The environment under `env`; by default the tests' (fixed secrets, a test admin). */
  baseEnv?: NodeJS.ProcessEnv;
  /** Each process in a process group of its own, so a terminal's Ctrl-C reaches only the caller, which stops them in order. */
  detached?: boolean;
  /** How long stop() lets a process finish its work before SIGKILL (default 20 s). */
  stopGraceMs?: number;
}

/** Settings of the processes the tests and benchmarks start: fixed secrets and a known admin. */
const TEST_BASE_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ORVADO_INTERNAL_SECRET: "fault-test-internal-secret-0123456789",
  ORVADO_URL_SIGNING_SECRET: "fault-test-url-signing-secret-0123456789",
  ORVADO_PRICES_FILE: `${ROOT}/config/prices.json`,
  ORVADO_MODELS_FILE: `${ROOT}/config/models.json`,
  ORVADO_ADMIN_EMAIL: "admin@example.test",
  ORVADO_ADMIN_PASSWORD: "admin-password-1",
};

/** The variable each service takes its listening port from. */
const PORT_VARIABLE: Record<ServiceName, string> = { auth: "AUTH_PORT", billing: "BILLING_PORT", generation: "GENERATION_PORT", edge: "PORT" };

/**
 * A process of the stack: a service's name for its first process, or
 * `<service>#<n>` for a further replica (same environment, its own port).
 */
export type ProcessName = ServiceName | `${ServiceName}#${number}`;

/** The n-th (1-based) process of a kind: the first is the kind's own name, the next `<name>#2`, `<name>#3`, … */
export function replicaName<N extends string>(name: N, n: number): N | `${N}#${number}` {
  return n === 1 ? name : `${name}#${n}`;
}

export class ProcessStack {
  /** The port of each service's first process. */
  readonly ports: Record<ServiceName, number>;
  /** The ports of each service's replicas started with the stack (options.replicas), first process first. */
  readonly replicaPorts: Record<ServiceName, number[]>;
  readonly #running = new Map<ProcessName, Running>();
  readonly #replicaPorts = new Map<ProcessName, number>();
  readonly #env: NodeJS.ProcessEnv;

  private constructor(
    replicaPorts: Record<ServiceName, number[]>,
    private readonly options: ProcessStackOptions,
  ) {
    this.replicaPorts = replicaPorts;
    this.ports = { auth: replicaPorts.auth[0]!, billing: replicaPorts.billing[0]!, generation: replicaPorts.generation[0]!, edge: replicaPorts.edge[0]! };
    const urls = (name: ServiceName) => replicaPorts[name].map((port) => `http://127.0.0.1:${port}`).join(",");
    this.#env = {
      ...(options.baseEnv ?? TEST_BASE_ENV),
      NODE_ENV: "production",
      DATABASE_URL: options.databaseUrl,
      AUTH_PORT: String(this.ports.auth),
      BILLING_PORT: String(this.ports.billing),
      GENERATION_PORT: String(this.ports.generation),
      PORT: String(this.ports.edge),
      ORVADO_AUTH_URL: urls("auth"),
      ORVADO_BILLING_URL: urls("billing"),
      ORVADO_GENERATION_URL: urls("generation"),
      // One directory for every generation replica: an image written by one is read through any.
      GENERATION_IMAGE_DIR: `${options.dataDir}/images`,
      ...options.env,
    };
  }

  static async start(options: ProcessStackOptions): Promise<ProcessStack> {
    const replicaPorts = {} as Record<ServiceName, number[]>;
    for (const name of SERVICE_NAMES) {
      replicaPorts[name] = [];
      for (let n = 0; n < (options.replicas?.[name] ?? 1); n++) replicaPorts[name].push(await freePort());
    }
    // The services run as production runs them: their bundles (`npm run build`), built from the current sources.
    await buildServicesOnce();
    const stack = new ProcessStack(replicaPorts, options);
    // If the test or bench dies, its service processes must not live on holding ports and connections.
    process.once("exit", () => {
      for (const running of stack.#running.values()) running.child.kill("SIGKILL");
    });
    try {
      // In dependency order: migrations of one schema never race, and callers find their peers up.
      for (const name of SERVICE_NAMES) {
        await stack.startService(name);
        for (let n = 2; n <= replicaPorts[name].length; n++) await stack.startReplica(name, n);
      }
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  get secret(): string {
    return this.#env.ORVADO_INTERNAL_SECRET!;
  }

  url(name: ServiceName): string {
    return `http://127.0.0.1:${this.ports[name]}`;
  }

  /** Process ids of the running services, in start order (for RSS sampling). */
  pids(): Record<string, number> {
    return Object.fromEntries([...this.#running].map(([name, running]) => [name, running.child.pid!]));
  }

  isRunning(name: ProcessName): boolean {
    return this.#running.has(name);
  }

  /** Starts one service and resolves when it logs that it is listening. */
  async startService(name: ServiceName): Promise<void> {
    await this.#spawn(name, name, this.#env);
  }

  /**
   * Starts a further process of a service (replica n ≥ 2) on a port of its own,
   * with the same environment and `env` over it: for example a second billing
   * process in the ledger's consumer group, or a second edge whose
   * ORVADO_GENERATION_URL is a second generation replica. A replica started with
   * the stack (options.replicas) comes back on its port, which callers list; any
   * other gets a new port, and other services keep calling the processes they were given.
   */
  async startReplica(name: ServiceName, n: number, env: NodeJS.ProcessEnv = {}): Promise<ProcessName> {
    const processName: ProcessName = replicaName(name, n);
    const port = this.replicaPorts[name][n - 1] ?? (await freePort());
    await this.#spawn(processName, name, { ...this.#env, ...env, [PORT_VARIABLE[name]]: String(port) });
    this.#replicaPorts.set(processName, port);
    return processName;
  }

  /** The address of a service's first process or of a replica (`generation#2`). */
  urlOf(name: ProcessName): string {
    const port = name.includes("#") ? this.#replicaPorts.get(name) : this.ports[name as ServiceName];
    if (port === undefined) throw new Error(`${name} was never started`);
    return `http://127.0.0.1:${port}`;
  }

  async #spawn(processName: ProcessName, name: ServiceName, env: NodeJS.ProcessEnv): Promise<void> {
    if (this.#running.has(processName)) throw new Error(`${processName} is already running`);
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS[name], "--enable-source-maps", bundlePath(name)], {
      cwd: ROOT,
      env: { ...env, ...this.options.serviceEnv?.[name] },
      stdio: ["ignore", "pipe", "pipe"],
      detached: this.options.detached ?? false,
    });
    const exited = once(child, "exit").then(() => {
      if (this.#running.get(processName)?.child === child) this.#running.delete(processName);
    });
    this.#running.set(processName, { child, exited });
    await this.#ready(name, child);
  }

  /** kill -9: no shutdown hooks, no draining, connections cut mid-flight. */
  async kill(name: ProcessName): Promise<void> {
    const running = this.#running.get(name);
    if (!running) return;
    running.child.kill("SIGKILL");
    await running.exited;
  }

  /** kill -9, then start the same process again on its port (a replica as `<service>#<n>`). */
  async restart(name: ProcessName): Promise<void> {
    await this.kill(name);
    const [service, replica] = name.split("#") as [ServiceName, string | undefined];
    if (replica === undefined) await this.startService(service);
    else await this.startReplica(service, Number(replica));
  }

  /**
   * SIGTERM (graceful) every process of the given services, or of all: the
   * edge first so no new work arrives, then generation (its jobs finish), billing
   * and auth. A service's processes stop together; one still running after
   * stopGraceMs is killed.
   */
  async stop(services: readonly ServiceName[] = SERVICE_NAMES): Promise<void> {
    for (const service of [...SERVICE_NAMES].reverse()) {
      if (!services.includes(service)) continue;
      const processes = [...this.#running].filter(([name]) => name.split("#")[0] === service).map(([, running]) => running);
      await Promise.all(processes.map((running) => this.#stopProcess(running)));
    }
  }

  async #stopProcess(running: Running): Promise<void> {
    running.child.kill("SIGTERM");
    const timer = setTimeout(() => running.child.kill("SIGKILL"), this.options.stopGraceMs ?? 20_000);
    await running.exited;
    clearTimeout(timer);
  }

  /** Resident memory of every service process, in bytes (Linux /proc). */
  async rssBytes(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const [name, running] of this.#running) {
      const status = await readFile(`/proc/${running.child.pid}/status`, "utf8").catch(() => "");
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      out[name] = kb * 1024;
    }
    return out;
  }

  async #ready(name: ServiceName, child: ChildProcess): Promise<void> {
    const marker = `"msg":"${name} listening"`;
    // Kept only until the service is up, to explain a failed start.
    let seen = "";
    let up = false;
    const lines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void) => {
      let buffer = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        buffer += chunk;
        for (let index = buffer.indexOf("\n"); index >= 0; index = buffer.indexOf("\n")) {
          onLine(buffer.slice(0, index));
          buffer = buffer.slice(index + 1);
        }
      });
    };
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not start within ${READY_TIMEOUT_MS} ms:\n${seen.slice(-4000)}`)), READY_TIMEOUT_MS);
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with ${code} while starting:\n${seen.slice(-4000)}`));
      };
      child.once("exit", onExit);
      lines(child.stdout!, (line) => {
        if (!up) seen += `${line}\n`;
        if (!up && line.includes(marker)) {
          up = true;
          seen = "";
          clearTimeout(timer);
          child.off("exit", onExit);
          resolve();
        }
        if (/"level":(40|50|60)/.test(line)) this.options.onLog?.(name, line);
      });
      lines(child.stderr!, (line) => {
        if (!up) seen += `${line}\n`;
        this.options.onLog?.(name, line);
      });
    });
  }
}
