import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { dockerEndpoint, probeDocker } from "./docker-probe.ts";

// The Docker probe over its real transport: HTTP on a Unix socket (and on TCP
// for DOCKER_HOST=tcp://), against local servers that play the engine's
// /_ping, and against sockets where nothing listens.

const dir = mkdtempSync(join(tmpdir(), "orvado-docker-probe-"));
const servers: http.Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  rmSync(dir, { recursive: true, force: true });
});

/** A fake engine: answers /_ping as told, records every path it was asked for. */
async function fakeEngine(listenOn: string | 0, ping: { status: number; body: string }) {
  const paths: string[] = [];
  const server = http.createServer((request, response) => {
    paths.push(`${request.method} ${request.url}`);
    if (request.url === "/_ping") response.writeHead(ping.status, { "content-type": "text/plain" }).end(ping.body);
    else response.writeHead(404).end();
  });
  servers.push(server);
  server.listen(listenOn === 0 ? { port: 0, host: "127.0.0.1" } : { path: listenOn });
  await once(server, "listening");
  const address = server.address();
  return { paths, port: typeof address === "object" && address ? address.port : 0 };
}

describe("probeDocker over a Unix socket", () => {
  it("DOCKER_HOST=unix://… answered with 200 OK → answers, after one GET /_ping", async () => {
    const socket = join(dir, "engine.sock");
    const engine = await fakeEngine(socket, { status: 200, body: "OK" });
    const status = await probeDocker({ DOCKER_HOST: `unix://${socket}` });
    expect(status).toEqual({ answers: true, detail: `unix://${socket} answered /_ping` });
    expect(engine.paths).toEqual(["GET /_ping"]);
  });

  it("DOCKER_HOST unset → the default socket is asked", async () => {
    const socket = join(dir, "default.sock");
    const engine = await fakeEngine(socket, { status: 200, body: "OK" });
    const status = await probeDocker({}, { defaultSocket: socket });
    expect(status.answers).toBe(true);
    expect(engine.paths).toEqual(["GET /_ping"]);
  });

  it("a missing socket → does not answer, and says why", async () => {
    const socket = join(dir, "nothing-here.sock");
    const status = await probeDocker({ DOCKER_HOST: `unix://${socket}` });
    expect(status.answers).toBe(false);
    expect(status.detail).toBe(`unix://${socket}: connect ENOENT ${socket}`);
  });

  it("the default socket missing (DOCKER_HOST unset) → does not answer", async () => {
    const socket = join(dir, "no-default.sock");
    const status = await probeDocker({}, { defaultSocket: socket });
    expect(status).toEqual({ answers: false, detail: `unix://${socket}: connect ENOENT ${socket}` });
  });

  it("a socket whose server answers /_ping with an error → does not answer", async () => {
    const socket = join(dir, "broken.sock");
    await fakeEngine(socket, { status: 500, body: "daemon is starting" });
    const status = await probeDocker({ DOCKER_HOST: `unix://${socket}` });
    expect(status).toEqual({ answers: false, detail: `unix://${socket} answered /_ping with 500 "daemon is starting"` });
  });

  it("a socket whose server answers 200 with something other than OK (not an engine) → does not answer", async () => {
    const socket = join(dir, "other.sock");
    await fakeEngine(socket, { status: 200, body: "<html>hello</html>" });
    expect((await probeDocker({ DOCKER_HOST: `unix://${socket}` })).answers).toBe(false);
  });
});

describe("probeDocker over TCP (DOCKER_HOST=tcp://)", () => {
  it("a plain TCP engine answering 200 OK → answers", async () => {
    const engine = await fakeEngine(0, { status: 200, body: "OK" });
    const status = await probeDocker({ DOCKER_HOST: `tcp://127.0.0.1:${engine.port}` });
    expect(status).toEqual({ answers: true, detail: `tcp://127.0.0.1:${engine.port} answered /_ping` });
    expect(engine.paths).toEqual(["GET /_ping"]);
  });

  it("TLS endpoints and other schemes are not probed → does not answer, with the reason", async () => {
    const tls = await probeDocker({ DOCKER_HOST: "tcp://docker.example:2376", DOCKER_TLS_VERIFY: "1" });
    expect(tls).toEqual({ answers: false, detail: "DOCKER_HOST=tcp://docker.example:2376: TLS endpoints (DOCKER_TLS_VERIFY) are not probed" });
    const ssh = await probeDocker({ DOCKER_HOST: "ssh://me@docker.example" });
    expect(ssh).toEqual({ answers: false, detail: "DOCKER_HOST=ssh://me@docker.example: only unix:// and tcp:// are probed" });
  });
});

describe("dockerEndpoint", () => {
  it("reads DOCKER_HOST, else the default socket", () => {
    expect(dockerEndpoint({})).toEqual({ kind: "unix", socketPath: "/var/run/docker.sock" });
    expect(dockerEndpoint({ DOCKER_HOST: "  " })).toEqual({ kind: "unix", socketPath: "/var/run/docker.sock" });
    expect(dockerEndpoint({ DOCKER_HOST: "unix:///run/user/1000/docker.sock" })).toEqual({ kind: "unix", socketPath: "/run/user/1000/docker.sock" });
    expect(dockerEndpoint({ DOCKER_HOST: "tcp://10.0.0.5:2375" })).toEqual({ kind: "tcp", host: "10.0.0.5", port: 2375 });
    expect(dockerEndpoint({ DOCKER_HOST: "tcp://docker.internal" })).toEqual({ kind: "tcp", host: "docker.internal", port: 2375 });
    expect(dockerEndpoint({ DOCKER_HOST: "tcp://10.0.0.5:2375", DOCKER_TLS_VERIFY: "0" })).toEqual({ kind: "tcp", host: "10.0.0.5", port: 2375 });
    expect(dockerEndpoint({ DOCKER_HOST: "npipe:////./pipe/docker_engine" }).kind).toBe("unsupported");
  });
});
