import type { Server } from "node:http";
import type { Socket } from "node:net";

// Whether a request Node's HTTP parser refused was a HEAD, whose answer must have
// no body (a client reads one as a broken next answer). The parser's error carries
// only the chunk it failed in (rawPacket), and a request line longer than one read
// (a 20-kB path, say) fails in a later chunk than the one its method came in. So
// the edge notes the method of each request as the parser begins it, from the
// parser's message-begin callback: slot kOnMessageBegin (0) of node_http_parser.cc,
// which Node calls when it is a function and its HTTP server leaves empty (null).
// llhttp begins a message at its first byte, so that chunk may end inside the
// method ("HE"); such a start is taken as far as it came.

const K_ON_MESSAGE_BEGIN = 0;
const REQUEST_METHOD = Symbol("orvado.requestMethod");

interface HttpParser {
  [K_ON_MESSAGE_BEGIN]?: unknown;
  socket?: Socket | null;
  getCurrentBuffer?(): Buffer;
}

type TrackedSocket = Socket & { parser?: HttpParser | null; [REQUEST_METHOD]?: string };

/** From now on each connection to `server` notes the method of the request its parser is reading. */
export function rememberRequestStarts(server: Server): void {
  // Node's own connection listener (added when the server was made) has given the socket its parser.
  server.on("connection", (socket: TrackedSocket) => {
    const parser = socket.parser;
    if (parser && parser[K_ON_MESSAGE_BEGIN] === null && typeof parser.getCurrentBuffer === "function") parser[K_ON_MESSAGE_BEGIN] = noteRequestMethod;
  });
}

function noteRequestMethod(this: HttpParser): void {
  const socket = this.socket as TrackedSocket | null | undefined;
  if (socket) socket[REQUEST_METHOD] = methodOfUnfinishedRequest(this.getCurrentBuffer!().toString("latin1"));
}

/**
 * True if the refused request was a HEAD, by what the connection noted or else by the failing chunk.
 * A method cut short by the end of a read ("HE") counts as HEAD: llhttp knows no other method that
 * begins with H, so any such request it did not refuse for its method is a HEAD.
 */
export function refusedRequestWasHead(socket: Socket, error: { code?: string; rawPacket?: Buffer }): boolean {
  if (error.code === "HPE_INVALID_METHOD") return false;
  const method = (socket as TrackedSocket)[REQUEST_METHOD] ?? (error.rawPacket && methodOfUnfinishedRequest(error.rawPacket.toString("latin1")));
  return !!method && "HEAD".startsWith(method);
}

const HTTP_VERSIONS = ["HTTP/1.1\r\n", "HTTP/1.0\r\n"];

/**
 * The method of the request the parser is reading in this chunk, if it shows one. A
 * request begins where the chunk does, or behind requests (or the unread rest of a
 * body) that end earlier in it. One whose head the chunk ends inside has no blank
 * line after it, so first: the first request line after the chunk's last blank
 * line that runs to the chunk's end or into its headers; else the request line the
 * chunk starts with. Each candidate is read up to its target's end, so the scan is
 * linear in the chunk.
 */
export function methodOfUnfinishedRequest(chunk: string): string | undefined {
  const lastBlankLine = chunk.lastIndexOf("\r\n\r\n");
  for (let start = lastBlankLine < 0 ? 0 : lastBlankLine + 4; start < chunk.length; start += 1) {
    if (start > 0 && isUpper(chunk, start - 1)) continue;
    const method = requestLineMethod(chunk, start);
    if (method !== undefined) return method;
  }
  return requestLineMethod(chunk, 0);
}

/**
 * The method of the request line at `start`: a token, a space, a target, then the chunk's end or
 * " HTTP/1.x" and its line end (or as much of them as the chunk holds). A line the chunk ends inside
 * its method, or right after it, gives the token as far as it came.
 */
function requestLineMethod(chunk: string, start: number): string | undefined {
  let space = start;
  while (space < chunk.length && isUpper(chunk, space)) space += 1;
  if (space === start) return undefined;
  const cutShort = space === chunk.length || (space === chunk.length - 1 && chunk[space] === " ");
  if (cutShort) return chunk.slice(start, space);
  if (chunk[space] !== " ") return undefined;
  let targetEnd = space + 1;
  while (targetEnd < chunk.length && !" \r\n".includes(chunk[targetEnd]!)) targetEnd += 1;
  if (targetEnd === space + 1) return undefined;
  const version = chunk.slice(targetEnd + 1, targetEnd + 11);
  const lineGoesOn = targetEnd === chunk.length || (chunk[targetEnd] === " " && HTTP_VERSIONS.some((known) => known.startsWith(version)));
  return lineGoesOn ? chunk.slice(start, space) : undefined;
}

function isUpper(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 65 && code <= 90;
}
