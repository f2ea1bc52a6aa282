import type { IncomingMessage } from "node:http";
import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { hostHeaderProblem, publicBase } from "./host-header.ts";

// The Host header rule and the links' base, on request objects built here (no transport);
// reply.test.ts checks the answers over raw TCP.

function request(version: string, rawHeaders: string[]): IncomingMessage {
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) headers[rawHeaders[i]!.toLowerCase()] ??= rawHeaders[i + 1]!;
  const [major, minor] = version.split(".").map(Number);
  return { rawHeaders, headers, httpVersionMajor: major, httpVersionMinor: minor } as unknown as IncomingMessage;
}

describe("hostHeaderProblem", () => {
  it("takes one Host with a value, and HTTP/1.0 without any", () => {
    expect(hostHeaderProblem(request("1.1", ["Host", "edge.example"]))).toBeNull();
    expect(hostHeaderProblem(request("1.1", ["hOsT", "edge.example", "Hostname", "x"]))).toBeNull();
    expect(hostHeaderProblem(request("1.0", []))).toBeNull();
  });

  it("refuses an HTTP/1.1 request with no Host or an empty one, and any with two", () => {
    expect(hostHeaderProblem(request("1.1", []))).toMatch(/no Host header/);
    expect(hostHeaderProblem(request("1.1", ["Host", ""]))).toMatch(/no Host header/);
    expect(hostHeaderProblem(request("1.1", ["Host", "a", "HOST", "b"]))).toMatch(/more than one Host header/);
    expect(hostHeaderProblem(request("1.0", ["Host", "a", "Host", "a"]))).toMatch(/more than one Host header/);
  });
});

describe("publicBase", () => {
  const fastifyRequest = (host: string, localAddress: string, localPort = 8080) =>
    ({ host, protocol: "http", raw: { socket: { localAddress, localPort } } }) as unknown as FastifyRequest;

  it("is ORVADO_PUBLIC_URL when set, else the address the client asked for", () => {
    expect(publicBase(fastifyRequest("edge.example:8080", "127.0.0.1"), "https://images.example")).toBe("https://images.example");
    expect(publicBase(fastifyRequest("edge.example:8080", "127.0.0.1"), undefined)).toBe("http://edge.example:8080");
  });

  it("names the address the connection came in on for a request with no Host (HTTP/1.0)", () => {
    expect(publicBase(fastifyRequest("", "10.0.0.5"), undefined)).toBe("http://10.0.0.5:8080");
    expect(publicBase(fastifyRequest("", "::1", 9000), undefined)).toBe("http://[::1]:9000");
  });
});
