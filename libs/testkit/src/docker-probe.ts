import http from "node:http";

// Does a Docker engine answer? Asked once when vitest.config.ts loads, so it
// must be quick and must never throw: a machine without Docker (CI's) simply
// gets "no". The engine's API answers GET /_ping with 200 "OK".

export interface DockerStatus {
  answers: boolean;
  /** Where it was asked and what came back, for the line the test run prints. */
  detail: string;
}

/** Where the engine's API is: DOCKER_HOST, else the default socket. */
export type DockerEndpoint =
  | { kind: "unix"; socketPath: string }
  | { kind: "tcp"; host: string; port: number }
  | { kind: "unsupported"; dockerHost: string; why: string };

export const DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock";
const PLAIN_TCP_PORT = 2375;

export function dockerEndpoint(env: NodeJS.ProcessEnv, defaultSocket = DEFAULT_DOCKER_SOCKET): DockerEndpoint {
  const dockerHost = (env.DOCKER_HOST ?? "").trim();
  if (!dockerHost) return { kind: "unix", socketPath: defaultSocket };
  if (dockerHost.startsWith("unix://")) return { kind: "unix", socketPath: dockerHost.slice("unix://".length) };
  if (dockerHost.startsWith("tcp://")) {
    // A TLS endpoint needs the client certificates; testcontainers reads them, this quick probe does not.
    if (env.DOCKER_TLS_VERIFY && env.DOCKER_TLS_VERIFY !== "0") {
      return { kind: "unsupported", dockerHost, why: "TLS endpoints (DOCKER_TLS_VERIFY) are not probed" };
    }
    const url = new URL(dockerHost);
    return { kind: "tcp", host: url.hostname, port: Number(url.port || PLAIN_TCP_PORT) };
  }
  return { kind: "unsupported", dockerHost, why: "only unix:// and tcp:// are probed" };
}

export function describeEndpoint(endpoint: DockerEndpoint): string {
  if (endpoint.kind === "unix") return `unix://${endpoint.socketPath}`;
  if (endpoint.kind === "tcp") return `tcp://${endpoint.host}:${endpoint.port}`;
  return endpoint.dockerHost;
}

export interface ProbeOptions {
  defaultSocket?: string;
  /** A remote engine that drops packets must not hold up every test run for long. */
  timeoutMs?: number;
}

export async function probeDocker(env: NodeJS.ProcessEnv = process.env, options: ProbeOptions = {}): Promise<DockerStatus> {
  const endpoint = dockerEndpoint(env, options.defaultSocket);
  const where = describeEndpoint(endpoint);
  if (endpoint.kind === "unsupported") return { answers: false, detail: `DOCKER_HOST=${where}: ${endpoint.why}` };
  const target = endpoint.kind === "unix" ? { socketPath: endpoint.socketPath } : { host: endpoint.host, port: endpoint.port };
  try {
    const { status, body } = await getPing(target, options.timeoutMs ?? 2_000);
    const answers = status === 200 && body.trim() === "OK";
    return { answers, detail: answers ? `${where} answered /_ping` : `${where} answered /_ping with ${status} ${JSON.stringify(body.slice(0, 80))}` };
  } catch (error) {
    return { answers: false, detail: `${where}: ${(error as Error).message}` };
  }
}

function getPing(target: http.RequestOptions, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ ...target, path: "/_ping", signal: AbortSignal.timeout(timeoutMs), agent: false }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      response.on("error", reject);
    });
    request.on("error", reject);
  });
}
