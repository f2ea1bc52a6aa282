import { describe, expect, it } from "vitest";
import { edgeOnLoopback, exchange, headAndBody, statusesOf } from "./test-support.ts";

// What the edge answers when Node's HTTP parser refuses a request (sendClientError), over
// raw TCP sockets to the edge's own HTTP server: one answer per request, and the status Node
// itself gives each refusal, in the error shape of docs/api.md#the-error-body.

const edge = edgeOnLoopback({ EDGE_REQUEST_TIMEOUT_MS: "300" });

/**
 * A request refused for its media type, answered 415 before its body is read (Fastify answers
 * before it reads a body no parser takes); `sent` is the part of the body that arrives.
 */
const refusedEarly = (length: number, sent: string) =>
  `POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nContent-Length: ${length}\r\n\r\n${sent}`;
const chunkedRefusedEarly = (sent: string) =>
  `POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n${sent}`;

describe("a request already answered whose body then fails (raw TCP)", () => {
  it("is not answered again when its body stalls: the 415 is the connection's only answer", async () => {
    const received = await exchange(edge.connect(), [refusedEarly(100, '{"model":')]);
    expect(statusesOf(received)).toEqual([415]);
  });

  it("is not answered again when the client's FIN cuts its body short", async () => {
    const socket = edge.connect();
    const answer = exchange(socket, [refusedEarly(100, '{"model":')]);
    setTimeout(() => socket.end(), 100);
    expect(statusesOf(await answer)).toEqual([415]);
  });

  it("is not answered again when a chunk of its body is malformed", async () => {
    const received = await exchange(edge.connect(), [chunkedRefusedEarly("5\r\nhello\r\n"), "zz\r\n"]);
    expect(statusesOf(received)).toEqual([415]);
  });

  it("is not answered again when Fastify's router refused its URL before its body arrived", async () => {
    const badUrl = `POST /v1/images/%zz HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":`;
    expect(statusesOf(await exchange(edge.connect(), [badUrl]))).toEqual([400]);
    const socket = edge.connect();
    const cut = exchange(socket, [badUrl]);
    setTimeout(() => socket.end(), 100);
    expect(statusesOf(await cut)).toEqual([400]);
  });

  it("is not answered again when its Expect header was refused (417)", async () => {
    const expecting = `POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`;
    expect(statusesOf(await exchange(edge.connect(), [expecting]))).toEqual([417]);
  });

  it("still answers the next request on the connection when that one stalls: 415, then 408", async () => {
    const next = "GET /v1/models HTTP/1.1\r\nHost: x\r\n";
    const received = await exchange(edge.connect(), [refusedEarly(2, "{}") + next]);
    expect(statusesOf(received)).toEqual([415, 408]);
    expect(JSON.parse(headAndBody(received.slice(received.lastIndexOf("HTTP/1.1 "))).body).error.code).toBe("invalid_request");
  });
});

describe("the status of each refusal by the parser (raw TCP)", () => {
  it("answers chunk extensions over Node's limit with 413 body_too_large", async () => {
    const received = await exchange(edge.connect(), [
      `POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;${"e".repeat(20_000)}\r\n{}\r\n0\r\n\r\n`,
    ]);
    const { head, body } = headAndBody(received);
    expect(head).toMatch(/^HTTP\/1\.1 413 /);
    expect(JSON.parse(body).error).toMatchObject({ type: "gateway_error", code: "body_too_large" });
    expect(JSON.parse(body).error.message).toMatch(/chunk extensions are larger than this server accepts/);
  });

  it("answers an Expect header other than 100-continue with 417 in the error shape, and a HEAD's without a body", async () => {
    const expecting = (method: string) => `${method} /v1/models HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n`;
    const { head, body } = headAndBody(await exchange(edge.connect(), [expecting("GET")]));
    expect(head).toMatch(/^HTTP\/1\.1 417 /);
    expect(head).toMatch(/\r\nx-request-id: req_/i);
    expect(JSON.parse(body).error).toMatchObject({ type: "gateway_error", code: "invalid_request" });
    expect(JSON.parse(body).error.message).toMatch(/only 100-continue is supported/);
    const headOnly = headAndBody(await exchange(edge.connect(), [expecting("HEAD")]));
    expect(headOnly.head).toMatch(/^HTTP\/1\.1 417 /);
    expect(headOnly.body).toBe("");
  });

  it("answers an HTTP/1.1 request without a Host header with 400 in the error shape, and serves one over HTTP/1.0", async () => {
    const { head, body } = headAndBody(await exchange(edge.connect(), ["GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"]));
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/\r\nx-request-id: req_/i);
    expect(JSON.parse(body).error).toMatchObject({ type: "gateway_error", code: "invalid_request" });
    expect(JSON.parse(body).error.message).toMatch(/no Host header/);
    expect(await exchange(edge.connect(), ["GET /healthz HTTP/1.0\r\n\r\n"])).toMatch(/^HTTP\/1\.1 200 [\s\S]*"status":"ok"/);
  });

  it("answers an empty Host header or two of them with 400 in the error shape", async () => {
    for (const headers of ["Host: \r\n", "Host: a\r\nHost: b\r\n"]) {
      const { head, body } = headAndBody(await exchange(edge.connect(), [`GET /healthz HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`]));
      expect(head, headers).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(body).error.message).toMatch(/Host header/);
    }
  });

  it("answers a missing Host before an Expect header: 400, and no 100 Continue for a body it would refuse", async () => {
    for (const expectation of ["foo", "100-continue"]) {
      const received = await exchange(edge.connect(), [
        `POST /v1/images/generations HTTP/1.1\r\nExpect: ${expectation}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n`,
      ]);
      expect(statusesOf(received), expectation).toEqual([400]);
      expect(JSON.parse(headAndBody(received).body).error.message).toMatch(/no Host header/);
    }
  });

  it("tells a request with a Host and Expect: 100-continue to send its body, then answers it", async () => {
    const received = await exchange(edge.connect(), ["GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"]);
    expect(statusesOf(received)).toEqual([100, 200]);
    expect(received).toContain('"status":"ok"');
  });

  it("answers malformed HTTP with 400 invalid_request", async () => {
    const { head, body } = headAndBody(await exchange(edge.connect(), ["GET / HTTP/1.1\r\nHost x\r\n\r\n"]));
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body).error).toMatchObject({ type: "gateway_error", code: "invalid_request" });
  });
});
