import type { IncomingMessage } from "node:http";
import type { FastifyRequest } from "fastify";

// The Host header (RFC 9112 §3.2): an HTTP/1.1 request must carry exactly one, with a value (an
// http URL always has an authority), and a server answers any other with 400. Node checks only
// that one is there, answering itself with a bare 400 and no request id; the edge turns that
// check off (requireHostHeader) and makes this one, answered in the error shape. HTTP/1.0
// requests may come without one (a balancer's health check).

/** Why the request's Host header is refused, or null when it is fine. */
export function hostHeaderProblem(request: IncomingMessage): string | null {
  const { rawHeaders } = request;
  let hosts = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") hosts += 1;
  }
  if (hosts > 1) return "The request has more than one Host header";
  const http11 = request.httpVersionMajor === 1 && request.httpVersionMinor >= 1;
  if (http11 && !request.headers.host) return "The request has no Host header, which HTTP/1.1 requires";
  return null;
}

/**
 * The base of the links an answer gives (image links): ORVADO_PUBLIC_URL when set, else the
 * address the client asked for (the Host header, or X-Forwarded-Host from a trusted balancer).
 * An HTTP/1.0 request may come without a Host; its links then name the address it connected to.
 */
export function publicBase(request: FastifyRequest, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl;
  if (request.host) return `${request.protocol}://${request.host}`;
  const { localAddress, localPort } = request.raw.socket;
  const address = localAddress?.includes(":") ? `[${localAddress}]` : localAddress;
  return `${request.protocol}://${address}:${localPort}`;
}
