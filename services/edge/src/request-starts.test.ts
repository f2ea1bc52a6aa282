import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { methodOfLastRequest } from "./request-starts.ts";
import { edgeOnLoopback, exchange as exchangeOn, headAndBody } from "./test-support.ts";

// Requests Node's parser refuses, sent over raw sockets so the test decides where
// each read ends: a request line longer than the 16-kB header limit, sent in two
// writes, fails in the second chunk, which no longer shows the method.

const edge = edgeOnLoopback();

const LONG_PATH = `/${"a".repeat(20_000)}`;

function exchange(parts: string[], socket: Socket = edge.connect()): Promise<string> {
  return exchangeOn(socket, parts);
}

function split(method: string): string[] {
  const line = `${method} ${LONG_PATH} HTTP/1.1\r\nHost: x\r\n\r\n`;
  return [line.slice(0, 10_000), line.slice(10_000)];
}

describe("requests the HTTP parser refuses", () => {
  it("answers a HEAD whose request line overflows in a later chunk with no body", async () => {
    const { head, body } = headAndBody(await exchange(split("HEAD")));
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/\r\nX-Request-Id: req_/i);
    expect(body).toBe("");
  });

  it("answers a GET refused the same way with the documented error body and its request id", async () => {
    const { head, body } = headAndBody(await exchange(split("GET")));
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    const requestId = /\r\nX-Request-Id: (req_[A-Za-z0-9_-]+)/i.exec(head)?.[1];
    expect(requestId).toBeDefined();
    const error = JSON.parse(body).error;
    expect(error.code).toBe("invalid_request");
    expect(error.message).toMatch(new RegExp(`\\(request id: ${requestId}\\)$`));
  });

  it("answers a HEAD refused in its first chunk with no body", async () => {
    const { head, body } = headAndBody(await exchange([`HEAD ${LONG_PATH} HTTP/1.1\r\nHost: x\r\n\r\n`]));
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(body).toBe("");
  });

  it("finds a HEAD that begins in the same read as the unread tail of the request before it", async () => {
    // The 404 goes out before the POST's body is read; Node then reads the rest of that body and
    // discards it, and the HEAD arrives right behind it, in the same chunk.
    const body = JSON.stringify({ prompt: "ABC HEAD x".repeat(1_000) });
    const post = `POST /no-such-route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const [line, rest] = split("HEAD");
    const answer = await exchange([post + body.slice(0, 100), body.slice(100) + line!, rest!]);
    const [first, second] = answer.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 404 /);
    const { head, body: answerBody } = headAndBody(second!);
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(answerBody).toBe("");
  });

  it("finds a whole HEAD, headers over the limit, that arrives in one read behind the tail of the request before it", async () => {
    // The tail of a POST's body, then a HEAD whose 20-kB header makes it fail, blank line and all,
    // in one chunk: the chunk's last blank line is the HEAD's own. (The parser fails before the POST
    // is answered, so the 431 is the connection's only answer.)
    const body = JSON.stringify({ prompt: "x".repeat(10_000) });
    const post = `POST /no-such-route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const headRequest = `HEAD /v1/files/img_aaaaaaaaaaaa.png?expires=1e400&sig=x HTTP/1.1\r\nX-Big: ${"h".repeat(20_000)}\r\nHost: x\r\n\r\n`;
    for (const tail of ["}", "ABC"]) {
      const answer = await exchange([post + body.slice(0, 100), body.slice(100, -tail.length) + tail + headRequest]);
      const { head, body: answerBody } = headAndBody(answer);
      expect(head, `a body ending ${tail}`).toMatch(/^HTTP\/1\.1 431 /);
      expect(answerBody, `a body ending ${tail}`).toBe("");
    }
  });

  it("answers a HEAD whose first read ends inside its method with no body, and a GET cut the same way with one", async () => {
    // llhttp calls message-begin at the first byte, so the chunk it shows may hold only "HE".
    const request = (method: string) => `${method} /api/cost/request/ HTTP/1.1\r\nHost: x\r\nX-Big: ${"h".repeat(20_000)}\r\n\r\n`;
    for (const cut of [1, 2, 3, 4, 5]) {
      const { head, body } = headAndBody(await exchange([request("HEAD").slice(0, cut), request("HEAD").slice(cut)]));
      expect(head, `HEAD cut after ${cut} bytes`).toMatch(/^HTTP\/1\.1 431 /);
      expect(body, `HEAD cut after ${cut} bytes`).toBe("");
    }
    const { head, body } = headAndBody(await exchange([request("GET").slice(0, 2), request("GET").slice(2)]));
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(body).error.code).toBe("invalid_request");
  });

  it("answers a method that only begins like HEAD with the error body", async () => {
    const { head, body } = headAndBody(await exchange(["HE", "AP /x HTTP/1.1\r\nHost: x\r\n\r\n"]));
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body).error.code).toBe("invalid_request");
  });

  it("answers a HEAD whose long target crosses reads with no body, whatever the read it fails in ends with", async () => {
    // The failing read is the middle of the target: its capitals ("…%2C", "…/README") are no method.
    for (const tail of ["aaaa", "%2C", "%3A", "sig=ABC", "/README"]) {
      const parts = [`HEAD /v1/files/x?${"a".repeat(9_990)}`, "a".repeat(9_000) + tail, " HTTP/1.1\r\nHost: x\r\n\r\n"];
      const { head, body } = headAndBody(await exchange(parts));
      expect(head, `a read ending in ${tail}`).toMatch(/^HTTP\/1\.1 431 /);
      expect(body, `a read ending in ${tail}`).toBe("");
    }
    const get = [`GET /v1/files/x?${"a".repeat(9_990)}`, `${"a".repeat(9_000)}HEAD`, " HTTP/1.1\r\nHost: x\r\n\r\n"];
    expect(JSON.parse(headAndBody(await exchange(get)).body).error.code).toBe("invalid_request");
  });

  it("scans a read that begins many pipelined requests once, not once per request", async () => {
    // Copied and scanned at every begin, one 64-kB read of tiny requests had cost time in the square of its size.
    const reads = new Map<Socket, number>();
    const countReads = (socket: Socket & { parser?: { getCurrentBuffer(): Buffer } }) => {
      const parser = socket.parser!;
      const getCurrentBuffer = parser.getCurrentBuffer.bind(parser);
      parser.getCurrentBuffer = () => {
        reads.set(socket, (reads.get(socket) ?? 0) + 1);
        return getCurrentBuffer();
      };
    };
    edge.app.server.on("connection", countReads);
    try {
      const requests = 500;
      const socket = edge.connect();
      let answers = 0;
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => {
        answers += chunk.split("HTTP/1.1 404 ").length - 1;
        if (answers === requests) socket.end();
      });
      socket.write("GET /no-such-route HTTP/1.1\r\nHost: x\r\n\r\n".repeat(requests));
      await new Promise((resolve) => socket.on("close", resolve));
      expect(answers).toBe(requests);
      expect([...reads.values()].reduce((sum, count) => sum + count, 0)).toBeLessThan(10);
    } finally {
      edge.app.server.off("connection", countReads);
    }
  });

  it("judges each request on a kept-alive connection by its own start", async () => {
    const answer = await exchange(["GET /no-such-route HTTP/1.1\r\nHost: x\r\n\r\n", ...split("HEAD")]);
    const [first, second] = answer.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 404 /);
    const { head, body } = headAndBody(second!);
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(body).toBe("");
  });
});

describe("methodOfLastRequest", () => {
  it("reads the request line a chunk starts with, whole or cut short", () => {
    expect(methodOfLastRequest("HEAD /aaaa")).toBe("HEAD");
    expect(methodOfLastRequest("HEAD /x HTTP/1.1\r\nX-Big: hhhh")).toBe("HEAD");
    expect(methodOfLastRequest("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")).toBe("GET");
    expect(methodOfLastRequest("POST /v1/x HTTP/1.")).toBe("POST");
    expect(methodOfLastRequest("HEAD /x HTTP/1.1\r")).toBe("HEAD");
  });

  it("takes the request that begins behind an earlier one or the rest of its body", () => {
    expect(methodOfLastRequest("GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /aaaa")).toBe("HEAD");
    expect(methodOfLastRequest('ABC HEAD xABC HEAD x"}HEAD /aaaa')).toBe("HEAD");
    expect(methodOfLastRequest('rompt":"x"}GET /v1/models HTTP/1.1\r\nHost')).toBe("GET");
  });

  it("takes the last request, whole, behind the tail of a body, even one ending in capitals", () => {
    expect(methodOfLastRequest('xxxx"}HEAD /v1/x HTTP/1.1\r\nX-Big: hhh\r\nHost: y\r\n\r\n')).toBe("HEAD");
    expect(methodOfLastRequest("a prompt in CAPITALSHEAD /x HTTP/1.1\r\nHost: y\r\n\r\n")).toBe("HEAD");
    expect(methodOfLastRequest("TOOLATEPUT /x HTTP/1.1\r\nHost: y")).toBe("PUT");
    expect(methodOfLastRequest('POST /v1 HTTP/1.1\r\nHost: x\r\n\r\n{"prompt":"a A b/c"}')).toBe("POST");
  });

  it("stops at the point it is given", () => {
    const twoRequests = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.1\r\nX: y";
    expect(methodOfLastRequest(twoRequests)).toBe("HEAD");
    expect(methodOfLastRequest(twoRequests, twoRequests.indexOf("HEAD"))).toBe("GET");
    expect(methodOfLastRequest(twoRequests, twoRequests.indexOf("HEAD") + 2)).toBe("HE");
  });

  it("shows no method for a chunk that starts inside one, or a line whose capitals end in none llhttp knows", () => {
    expect(methodOfLastRequest("EAD /x HTTP/1.1\r\nHost: y")).toBeUndefined();
    expect(methodOfLastRequest("FOO /x HTTP/1.1\r\nHost: y")).toBeUndefined();
    expect(methodOfLastRequest(" /x HTTP/1.1\r\nHost: y")).toBeUndefined();
  });

  it("gives a method the chunk ends inside, or right after, as far as it came", () => {
    expect(methodOfLastRequest("HE")).toBe("HE");
    expect(methodOfLastRequest("HEAD ")).toBe("HEAD");
    expect(methodOfLastRequest('GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEA')).toBe("HEA");
    expect(methodOfLastRequest('rompt":"x"}H')).toBe("H");
  });

  it("takes a cut line for a header of the request line opening its head, when the read held no body", () => {
    const headsOnly = (chunk: string) => methodOfLastRequest(chunk, undefined, true);
    expect(headsOnly("GET /a HTTP/1.1\r\nH")).toBe("GET");
    expect(headsOnly("HEAD /a HTTP/1.1\r\nX-Note: GET /b HTTP/1.1\r\nAC")).toBe("HEAD");
    expect(headsOnly("GET /a HTTP/1.1\r\nHost: x\r\n\r\nH")).toBe("H");
    expect(headsOnly("HEAD /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nH")).toBe("GET");
    // A read that held a body: its lines may only look like a head.
    expect(methodOfLastRequest("GET /a HTTP/1.1\r\nH")).toBe("H");
  });

  it("shows no method for a chunk from the middle of a request", () => {
    expect(methodOfLastRequest("aaaaaaaaaa HTTP/1.1\r\nHost: x\r\n\r\n")).toBeUndefined();
    expect(methodOfLastRequest("\u0000\u0001 garbage")).toBeUndefined();
    expect(methodOfLastRequest("")).toBeUndefined();
  });

  it("reads a chunk of many decoys to its end", () => {
    expect(methodOfLastRequest(`${"A a ".repeat(16_000)}HEAD /x`)).toBe("HEAD");
    expect(methodOfLastRequest(`${"A".repeat(64_000)}HEAD /x HTTP/1.1\r\nHost: y`)).toBe("HEAD");
    expect(methodOfLastRequest(`${"A".repeat(64_000)}HE`)).toBe("HE");
  });
});

describe("refusals of requests cut anywhere: with no read to scan, one byte into a line, in a body, and through 'data' events", () => {
  // Its own edge: a short request timeout, and connections whose reads another listener watches
  // (Node then feeds the parser from 'data' events) when the test asks for it.
  const edge = edgeOnLoopback({ EDGE_REQUEST_TIMEOUT_MS: "300" });
  let watchReads = false;
  edge.app.server.on("connection", (socket: Socket) => {
    if (!watchReads) return;
    // Both writes below reach the parser after the pause, at one byte count.
    socket.on("data", () => undefined);
    socket.pause();
    setTimeout(() => socket.resume(), 300);
  });
  const toEdge = edge.connect;
  const started = "HEAD /v1/models HTTP/1.1\r\nHost: x\r\n";

  it("answers a HEAD whose headers stall, in the read it began in, with a 408 and no body", async () => {
    const { head, body } = headAndBody(await exchange([started], toEdge()));
    expect(head).toMatch(/^HTTP\/1\.1 408 /);
    expect(body).toBe("");
  });

  it("answers a HEAD the client's FIN cuts short, in the read it began in, with a 400 and no body", async () => {
    const socket = toEdge();
    const answer = exchange([started], socket);
    setTimeout(() => socket.end(), 50);
    const { head, body } = headAndBody(await answer);
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(body).toBe("");
  });

  // A read that ends one byte into a header line (the H of Host) or into a body ("…H") shows a lone
  // capital where a pipelined request's method could begin; it is neither.
  const post = (sent: string) => `POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n${sent}`;
  const bigHeader = `X-Big: ${"h".repeat(20_000)}\r\n\r\n`;
  /** A request answered 404 whose body (real newlines, as text/plain and multipart hold) is read whole before the next request. */
  const postWith = (body: string, type = "text/plain") =>
    `POST /no-such-route HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const posterText = "Draw a poster that reads:\r\nGET /index.html HTTP/1.1\r\n";
  const multipart = '--b\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nA sign that says\r\nGET / HTTP/1.1\r\n--b--\r\n';
  const cases: { label: string; parts: string[]; fin?: boolean; status: number; head: boolean }[] = [
    { label: "a GET whose headers stall after the H of Host", parts: ["GET /v1/models HTTP/1.1\r\nH"], status: 408, head: false },
    { label: "a GET the client's FIN cuts after the H of Host", parts: ["GET /v1/models HTTP/1.1\r\nH"], fin: true, status: 400, head: false },
    { label: "a GET whose first read ends with the H of Host, over the limit later", parts: ["GET /v1/models HTTP/1.1\r\nH", `ost: x\r\n${bigHeader}`], status: 431, head: false },
    { label: "a HEAD whose headers stall after the C of Content-Type", parts: ["HEAD /v1/models HTTP/1.1\r\nHost: x\r\nC"], status: 408, head: true },
    { label: "a HEAD whose first read ends with the A of Accept, over the limit later", parts: ["HEAD /v1/models HTTP/1.1\r\nHost: x\r\nA", `ccept: */*\r\n${bigHeader}`], status: 431, head: true },
    { label: "a POST whose body stalls after '{\"prompt\":\"H'", parts: [post('{"prompt":"H')], status: 408, head: false },
    { label: "a POST whose body the client's FIN cuts after '{\"prompt\":\"H'", parts: [post('{"prompt":"H')], fin: true, status: 400, head: false },
    { label: "a POST whose body stalls in its second read, the first ending in H", parts: [post('{"prompt":"H'), "ello"], status: 408, head: false },
    // Lines that look like a request's head, inside a body (text/plain, multipart) or a header: never the method.
    { label: "a HEAD cut after its H behind a text body holding a request line, over the limit later", parts: [postWith(posterText) + "H", `EAD /v1/models HTTP/1.1\r\nHost: x\r\n${bigHeader}`], status: 431, head: true },
    { label: "a HEAD whose headers stall after 'HEAD /v1/mo' behind a multipart upload holding a request line", parts: [postWith(multipart, "multipart/form-data; boundary=b") + "HEAD /v1/mo"], status: 408, head: true },
    { label: "a GET whose headers stall after its G behind a body ending in a HEAD request line", parts: [postWith("See:\r\nHEAD /x HTTP/1.1\r\n") + "G"], status: 408, head: false },
    { label: "a GET the client's FIN cuts after 'GET /v1/mod' behind such a body", parts: [postWith("See:\r\nHEAD /x HTTP/1.1\r\n") + "GET /v1/mod"], fin: true, status: 400, head: false },
    { label: "a HEAD with a header ending like a request line, its headers stalling after the H of the next", parts: ["HEAD /v1/models HTTP/1.1\r\nX-Note: GET /b HTTP/1.1\r\nH"], status: 408, head: true },
    // A method begun right behind a body whose last line has spaces in it.
    { label: "a HEAD cut after 'HE' behind a JSON body", parts: [postWith('{"prompt":"a cat"}', "application/json") + "HE"], status: 408, head: true },
    { label: "a HEAD cut after 'H' behind a JSON body, over the limit later", parts: [postWith('{"prompt":"a cat"}', "application/json") + "H", `EAD /v1/models HTTP/1.1\r\nHost: x\r\n${bigHeader}`], status: 431, head: true },
    { label: "a GET whose headers stall after 'X-Note: a cat H'", parts: ["GET /v1/models HTTP/1.1\r\nX-Note: a cat H"], status: 408, head: false },
  ];
  for (const { label, parts, fin, status, head: isHead } of cases) {
    it(`answers ${label} with ${status} and ${isHead ? "no body" : "its error body"}`, async () => {
      const socket = toEdge();
      const answer = exchange(parts, socket);
      if (fin) setTimeout(() => socket.end(), 50 * parts.length);
      // The refusal is the connection's last answer (after a 404 for a request before it).
      const { head, body } = headAndBody((await answer).split(/(?=HTTP\/1\.1 \d{3} )/).pop()!);
      expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      if (isHead) expect(body).toBe("");
      else expect(JSON.parse(body).error.code).toBe("invalid_request");
    });
  }

  it("answers a HEAD whose long target crosses reads with no body when the reads reach the parser through 'data' events", async () => {
    watchReads = true;
    try {
      const { head, body } = headAndBody(await exchange(split("HEAD"), toEdge()));
      expect(head).toMatch(/^HTTP\/1\.1 431 /);
      expect(body).toBe("");
    } finally {
      watchReads = false;
    }
  });
});
