import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server, type ServerResponse } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { guardedFetch } from "./guarded-fetch.ts";

// The guarded fetch and event streams (streamed-answer.ts), over real HTTP against a local
// server that holds its stream open: a successful event stream is handed on as it arrives,
// through node:http (a JSON body) and through fetch (a multipart body) alike, under the byte limit.

let server: Server;
let base = "";
/** The stream the test is writing to, and a way to end it. */
let open: ServerResponse | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url?.endsWith("/refused")) {
        res.writeHead(400, { "content-type": "text/event-stream" });
        return res.end("data: not streamed\n\n");
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: first\n\n");
      open = res;
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

const guarded = (maxResponseBytes = 1024 * 1024) =>
  guardedFetch({ provider: "openai", baseUrl: base, allowPrivateNetwork: true, maxResponseBytes, onRefusal: () => undefined });

const bodies: [string, () => NonNullable<RequestInit["body"]>][] = [
  ["a JSON body (node:http)", () => "{}"],
  ["a multipart body (fetch)", () => new FormData()],
];

describe.each(bodies)("an event stream answering %s, over HTTP", (_label, body) => {
  it("is handed on as it arrives: the first event is readable while the stream is still open", async () => {
    const response = await guarded()(`${base}/images/generations`, { method: "POST", body: body() });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: first\n\n");
    open!.end("data: last\n\n");
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("data: last\n\n");
    expect((await reader.read()).done).toBe(true);
  });

  it("fails once its bytes pass the limit, and lets the connection go", async () => {
    const response = await guarded(64)(`${base}/images/generations`, { method: "POST", body: body() });
    const text = response.text();
    open!.write(`data: ${"x".repeat(100)}\n\n`);
    await expect(text).rejects.toThrow("the upstream answer exceeded the 64-byte limit");
    await once(open!, "close");
  });

  it("is read whole, as any answer, when it is not a success", async () => {
    const response = await guarded()(`${base}/images/refused`, { method: "POST", body: body() });
    expect(response.status).toBe(400);
    expect(await response.text()).toBe("data: not streamed\n\n");
  });
});
