import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startTestStack, type TestStack } from "./harness.ts";

// The edge's time bounds over raw TCP sockets (net.connect) to its HTTP server:
// a request whose headers or body stall or trickle is answered 408 in the documented
// error shape and closed, an idle keep-alive connection is closed, and a job that
// runs far longer than the request bound still answers. The stack runs with small
// bounds (EDGE_REQUEST_TIMEOUT_MS=300, EDGE_KEEP_ALIVE_TIMEOUT_MS=300); the tests
// wait for "eventually", never for a duration.

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ EDGE_REQUEST_TIMEOUT_MS: "300", EDGE_KEEP_ALIVE_TIMEOUT_MS: "300" });
});
afterAll(async () => {
  await stack?.close();
});

interface Connection {
  socket: Socket;
  /** Everything the server sent, once it has closed the connection. */
  closed: Promise<string>;
}

function open(): Promise<Connection> {
  const { port } = new URL(stack.edgeUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => {
      let received = "";
      socket.on("data", (chunk) => (received += chunk.toString("latin1")));
      const closed = new Promise<string>((done) => socket.on("close", () => done(received)));
      resolve({ socket, closed });
    });
    socket.once("error", reject);
    socket.on("error", () => {});
  });
}

function expect408(answer: string) {
  expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
  expect(body.error).toMatchObject({ type: "gateway_error", code: "invalid_request" });
  expect(body.error.message).toMatch(/took too long to arrive \(request id: req_/);
}

const postHead = (length: number) =>
  `POST /v1/images/generations HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer td-whatever\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe("requests that take too long to arrive (raw TCP)", () => {
  it("answers 408 and closes when the body stalls after the headers", async () => {
    const { socket, closed } = await open();
    socket.write(postHead(100) + '{"model":');
    expect408(await closed);
  });

  it("answers 408 and closes when the body trickles in a byte at a time", async () => {
    const { socket, closed } = await open();
    socket.write(postHead(100_000));
    const trickle = setInterval(() => socket.writable && socket.write(" "), 20);
    try {
      expect408(await closed);
    } finally {
      clearInterval(trickle);
    }
  });

  it("answers 408 and closes when the headers stall", async () => {
    const { socket, closed } = await open();
    socket.write("GET /healthz HTTP/1.1\r\nHost: edge\r\n");
    expect408(await closed);
  });

  it("closes a connection that sends nothing", async () => {
    const { closed } = await open();
    await closed;
  });

  it("closes a keep-alive connection left idle after its answer", async () => {
    const { socket, closed } = await open();
    socket.write("GET /healthz HTTP/1.1\r\nHost: edge\r\n\r\n");
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('{"status":"ok"}');
    expect(answer).not.toContain("408");
  });
});

describe("a response that takes long (raw TCP)", () => {
  it("is not cut by the request bound: a job running many times longer still answers 200", async () => {
    const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    const { account } = await auth.createAccount({ email: "slow-job@example.test", password: "correct horse battery" });
    await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "test" });
    const { secret } = await auth.createKey({ accountId: account!.accountId, name: "slow" });
    const body = JSON.stringify({ model: "beta", prompt: "a slow painting [sandbox:delay=3000]", response_format: "b64_json" });
    const { socket, closed } = await open();
    socket.write(
      `POST /v1/images/generations HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('"b64_json"');
  });
});
