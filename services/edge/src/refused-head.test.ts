import { describe, expect, it } from "vitest";
import { methodOfLastRequest } from "./refused-head.ts";
import { edgeOnLoopback, exchange, headAndBody, statusesOf } from "./test-support.ts";

// HEAD requests Node's parser refuses, sent over raw TCP sockets to the edge's own HTTP server so
// the test decides what each read holds: a request whose head is over the 16-kB limit fails in the
// read its request line came in.

const edge = edgeOnLoopback();

const overLimit = (method: string) => `${method} /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${"h".repeat(20_000)}\r\n\r\n`;

describe("a HEAD the HTTP parser refuses (raw TCP)", () => {
  it("is answered with no body when its head is over the limit, and a GET so refused with the error body and its request id", async () => {
    const headOnly = headAndBody(await exchange(edge.connect(), [overLimit("HEAD")]));
    expect(headOnly.head).toMatch(/^HTTP\/1\.1 431 /);
    expect(headOnly.head).toMatch(/\r\nX-Request-Id: req_/i);
    expect(headOnly.body).toBe("");
    const { head, body } = headAndBody(await exchange(edge.connect(), [overLimit("GET")]));
    const requestId = /\r\nX-Request-Id: (req_[A-Za-z0-9_-]+)/i.exec(head)?.[1];
    expect(JSON.parse(body).error.code).toBe("invalid_request");
    expect(JSON.parse(body).error.message).toMatch(new RegExp(`\\(request id: ${requestId}\\)$`));
  });

  it("is answered with no body behind an earlier request on the same kept-alive connection", async () => {
    const received = await exchange(edge.connect(), ["GET /no-such-route HTTP/1.1\r\nHost: x\r\n\r\n", overLimit("HEAD")]);
    expect(statusesOf(received)).toEqual([404, 431]);
    expect(headAndBody(received.slice(received.lastIndexOf("HTTP/1.1 "))).body).toBe("");
  });

  it("is answered with no body when it arrives in one read behind the tail of the request before it", async () => {
    // The parser fails before the POST is answered, so the 431 is the connection's only answer.
    const body = JSON.stringify({ prompt: "x".repeat(10_000) });
    const post = `POST /no-such-route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    for (const tail of ["}", "ABC"]) {
      const { head, body: answer } = headAndBody(await exchange(edge.connect(), [post + body.slice(0, 100), body.slice(100, -tail.length) + tail + overLimit("HEAD")]));
      expect(head, `a body ending ${tail}`).toMatch(/^HTTP\/1\.1 431 /);
      expect(answer, `a body ending ${tail}`).toBe("");
    }
  });

  it("is not a method that only begins like HEAD: that one gets the error body", async () => {
    const { head, body } = headAndBody(await exchange(edge.connect(), ["HE", "AP /x HTTP/1.1\r\nHost: x\r\n\r\n"]));
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body).error.code).toBe("invalid_request");
  });
});

describe("methodOfLastRequest", () => {
  it("reads the request line a chunk starts with, whole or cut short after its method", () => {
    expect(methodOfLastRequest("HEAD /aaaa")).toBe("HEAD");
    expect(methodOfLastRequest("HEAD ")).toBe("HEAD");
    expect(methodOfLastRequest("HEAD /x HTTP/1.1\r\nX-Big: hhhh")).toBe("HEAD");
    expect(methodOfLastRequest("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")).toBe("GET");
    expect(methodOfLastRequest("POST /v1/x HTTP/1.")).toBe("POST");
    expect(methodOfLastRequest("HEAD /x HTTP/1.1\r")).toBe("HEAD");
  });

  it("takes the request that begins behind an earlier one or the rest of its body, even one ending in capitals", () => {
    expect(methodOfLastRequest("GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /aaaa")).toBe("HEAD");
    expect(methodOfLastRequest('ABC HEAD xABC HEAD x"}HEAD /aaaa')).toBe("HEAD");
    expect(methodOfLastRequest('rompt":"x"}GET /v1/models HTTP/1.1\r\nHost')).toBe("GET");
    expect(methodOfLastRequest('xxxx"}HEAD /v1/x HTTP/1.1\r\nX-Big: hhh\r\nHost: y\r\n\r\n')).toBe("HEAD");
    expect(methodOfLastRequest("a prompt in CAPITALSHEAD /x HTTP/1.1\r\nHost: y\r\n\r\n")).toBe("HEAD");
    expect(methodOfLastRequest("TOOLATEPUT /x HTTP/1.1\r\nHost: y")).toBe("PUT");
    expect(methodOfLastRequest('POST /v1 HTTP/1.1\r\nHost: x\r\n\r\n{"prompt":"a A b/c"}')).toBe("POST");
  });

  it("stops at the point it is given, and takes a header line cut there for one of the request above it", () => {
    const twoRequests = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.1\r\nX: y";
    expect(methodOfLastRequest(twoRequests)).toBe("HEAD");
    expect(methodOfLastRequest(twoRequests, twoRequests.indexOf("HEAD"))).toBe("GET");
    expect(methodOfLastRequest("GET /a HTTP/1.1\r\nH")).toBe("GET");
    expect(methodOfLastRequest("GET /v1/models HTTP/1.1\r\nX-Note: a cat H")).toBe("GET");
  });

  it("shows no method for a chunk that starts inside one, from the middle of a request, or with capitals that end in none llhttp knows", () => {
    expect(methodOfLastRequest("EAD /x HTTP/1.1\r\nHost: y")).toBeUndefined();
    expect(methodOfLastRequest("FOO /x HTTP/1.1\r\nHost: y")).toBeUndefined();
    expect(methodOfLastRequest(" /x HTTP/1.1\r\nHost: y")).toBeUndefined();
    expect(methodOfLastRequest("aaaaaaaaaa HTTP/1.1\r\nHost: x\r\n\r\n")).toBeUndefined();
    expect(methodOfLastRequest("\u0000\u0001 garbage")).toBeUndefined();
    expect(methodOfLastRequest("")).toBeUndefined();
  });

  it("reads a chunk of many decoys to its end", () => {
    expect(methodOfLastRequest(`${"A a ".repeat(16_000)}HEAD /x`)).toBe("HEAD");
    expect(methodOfLastRequest(`${"A".repeat(64_000)}HEAD /x HTTP/1.1\r\nHost: y`)).toBe("HEAD");
  });
});
