import { createServer, type Server } from "node:http";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookup as dnsLookup } from "node:dns";
import { fetchWithLookup, pinnedFetch, publicOnlyLookup } from "./pinned-fetch.ts";

// The address check happens where the connection is made, so a name that resolves
// to an internal address is refused even when nothing checked the name beforehand
// (the DNS-rebinding case: the name resolved to a public address a moment earlier).

let server: Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = createServer((_request, response) => {
    hits += 1;
    response.end("secret");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as { port: number }).port;
});
afterAll(() => server?.close());

describe("pinnedFetch", () => {
  it("refuses a name that resolves to an internal address at connection time, sending nothing", async () => {
    await expect(pinnedFetch(new URL(`http://localhost:${port}/x`), { method: "GET", headers: new Headers() })).rejects.toThrow(
      /resolves to the internal address/,
    );
    await expect(pinnedFetch(new URL(`http://127.0.0.1:${port}/x`), { method: "GET", headers: new Headers() })).rejects.toThrow(
      /internal address 127\.0\.0\.1/,
    );
    await expect(pinnedFetch(new URL("file:///etc/passwd"), { method: "GET", headers: new Headers() })).rejects.toThrow(/file:/);
    expect(hits).toBe(0);
  });

  it("answers as a fetch Response: status, headers and the whole body", async () => {
    const anyAddress = ((host, options, callback) => dnsLookup(host, options, callback as never)) as typeof publicOnlyLookup;
    const response = await fetchWithLookup(new URL(`http://localhost:${port}/image.png`), { method: "GET", headers: new Headers({ accept: "image/png" }) }, anyAddress);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe("6");
    expect(await response.text()).toBe("secret");
    hits = 0;
  });

  it("gives the connection's lookup only public answers", async () => {
    const answer = await new Promise<unknown>((resolve) => publicOnlyLookup("localhost", {}, (error) => resolve(error)));
    expect(String(answer)).toMatch(/internal address/);
  });
});
