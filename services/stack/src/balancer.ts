// The load balancer in front of the edges for `npm run start:cluster`: HAProxy
// from Debian's package, run in the foreground with a config written here. The
// same settings are in deploy/haproxy.cfg for docker-compose.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { accessSync, constants, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { delimiter, join } from "node:path";

export const HAPROXY_INSTALL_HINT = "sudo apt-get install haproxy   (Debian/Ubuntu; HAProxy 2.6 or later)";

/** The haproxy binary on PATH (or in /usr/sbin, where Debian puts it), or null. */
export function findHaproxy(path = process.env.PATH ?? ""): string | null {
  for (const dir of [...path.split(delimiter).filter(Boolean), "/usr/sbin", "/usr/local/sbin"]) {
    const candidate = join(dir, "haproxy");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export interface BalancerSettings {
  /** Where clients connect. */
  host: string;
  port: number;
  /** The edges, as host:port. */
  edges: string[];
  /** Longest a request may stay open (a job runs up to GENERATION_JOB_TIMEOUT_MS): the client and server timeouts exceed it. */
  longestRequestMs: number;
  /**
   * HAProxy's `timeout server` (how long an edge may send nothing) when it must be shorter,
   * as an idle timeout of a balancer in front of Orvado often is; a stream's heartbeats keep it from firing.
   */
  serverIdleTimeoutMs?: number;
}

/**
 * HTTP mode, least connections (a job holds its request for its whole run), a
 * health check on each edge's /healthz, X-Forwarded-For for the edges'
 * per-client limits. A request is sent to another edge only when the
 * connection to the first failed (HAProxy's default retry-on conn-failure): once
 * an edge has a request, it may have started a job.
 */
/**
 * How long HAProxy keeps an idle keep-alive connection, to a client or to an edge: below the
 * edges' EDGE_KEEP_ALIVE_TIMEOUT_MS default, so it lets an idle connection go before the edge
 * does and never sends a request into one the edge is closing (docs/configuration.md#behind-a-load-balancer).
 */
export const BALANCER_KEEP_ALIVE_MS = 60_000;

export function haproxyConfig(settings: BalancerSettings): string {
  // Inactivity timeouts: a synchronous job sends nothing either way for up to its limit; a
  // stream's heartbeats reset them; `tunnel` replaces both for an upgraded connection (WebSocket).
  const timeout = `${settings.longestRequestMs + 60_000}ms`;
  const servers = settings.edges.map((edge, index) => `  server edge${index + 1} ${edge} check inter 1s fall 2 rise 1`);
  return [
    "global",
    // After a soft stop (SIGUSR1), requests in flight get this long to finish.
    `  hard-stop-after ${timeout}`,
    "",
    "defaults",
    "  mode http",
    "  timeout connect 5s",
    `  timeout client ${timeout}`,
    `  timeout server ${settings.serverIdleTimeoutMs === undefined ? timeout : `${settings.serverIdleTimeoutMs}ms`}`,
    `  timeout tunnel ${timeout}`,
    "  timeout http-request 30s",
    `  timeout http-keep-alive ${BALANCER_KEEP_ALIVE_MS}ms`,
    "  retries 2",
    "  option redispatch 1",
    "  option forwardfor",
    "",
    "frontend public",
    `  bind ${settings.host}:${settings.port}`,
    "  default_backend edges",
    "",
    "backend edges",
    "  balance leastconn",
    "  option httpchk GET /healthz",
    "  http-check expect status 200",
    ...servers,
    "",
  ].join("\n");
}

export interface RunningBalancer {
  url: string;
  /** Stops taking connections now; resolves once the requests in flight have been answered and HAProxy has exited. */
  softStop(): Promise<void>;
  /** Ends it at once. */
  kill(): void;
}

/** The address the balancer is reached at from this machine. */
export const balancerUrl = (host: string, port: number) => `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;

export async function startBalancer(binary: string, configPath: string, settings: BalancerSettings, onLog: (line: string) => void): Promise<RunningBalancer> {
  writeFileSync(configPath, haproxyConfig(settings));
  // -db: foreground, no daemon. Its own process group: a terminal's Ctrl-C is for the supervisor, which stops things in order.
  const child = spawn(binary, ["-db", "-f", configPath], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  const exited = once(child, "exit");
  for (const stream of [child.stdout!, child.stderr!]) stream.setEncoding("utf8").on("data", (chunk: string) => chunk.split("\n").filter(Boolean).forEach(onLog));
  await waitUntilListening(child, settings.host, settings.port);
  return {
    url: balancerUrl(settings.host, settings.port),
    async softStop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGUSR1");
      await exited;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

async function waitUntilListening(child: ChildProcess, host: string, port: number): Promise<void> {
  const address = host === "0.0.0.0" ? "127.0.0.1" : host;
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode} while starting (is port ${port} free?)`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, address);
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill("SIGKILL");
  throw new Error(`haproxy did not listen on ${address}:${port} within 10 s`);
}
