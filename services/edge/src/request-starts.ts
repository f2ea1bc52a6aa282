import { METHODS, type IncomingMessage, type Server } from "node:http";
import type { Socket } from "node:net";

// Whether a request Node's HTTP parser refused was a HEAD, whose answer must have
// no body (a client reads one as a broken next answer). The parser's error carries
// only the chunk it failed in (rawPacket) and how far into it it got (bytesParsed),
// and a request line longer than one read (a 20-kB path, say) fails in a later
// chunk than the one its method came in. So the edge notes, for each read in which
// a request begins, the method of the read's last request: the parser's
// message-begin callback (slot kOnMessageBegin (0) of node_http_parser.cc, which
// Node calls when it is a function and its HTTP server leaves empty, null) scans the
// read once, at its first begin, and keeps the method with the socket's byte count
// (bytesRead, the same for every begin of one read). A request that fails in a later
// read was the last to begin in its own, so its request line is that read's last.
// llhttp begins a message at its first byte, so that read may end inside the
// method ("HE"); such a start is taken as far as it came. A request that fails in
// the read it began in is found in that read, before the point the parser failed at.

const K_ON_MESSAGE_BEGIN = 0;
const K_ON_BODY = 3;
const REQUEST_START = Symbol("orvado.requestStart");
/** The socket's byte count when the parser last handed on body bytes: a read that held a body. */
const BODY_READ_AT = Symbol("orvado.bodyReadAt");
const NOTES_BODIES = Symbol("orvado.notesBodies");

interface HttpParser {
  [K_ON_MESSAGE_BEGIN]?: unknown;
  [K_ON_BODY]?: unknown;
  /** True while the parser reads the socket's handle itself (Node's consume path), one read per parse. */
  _consumed?: boolean;
  /** The request whose head the parser has read whole, complete once its body is. */
  incoming?: IncomingMessage | null;
  socket?: Socket | null;
  getCurrentBuffer?(): Buffer;
}

/** The read the latest request began in (the socket's byte count after it) and its last request's method. */
interface RequestStart {
  readAt: number;
  method: string | undefined;
}

type TrackedSocket = Socket & { parser?: HttpParser | null; [REQUEST_START]?: RequestStart; [BODY_READ_AT]?: number };
type BodyCallback = ((this: HttpParser, ...args: unknown[]) => unknown) & { [NOTES_BODIES]?: true };

/** From now on each connection to `server` notes the method of the request its parser is reading. */
export function rememberRequestStarts(server: Server): void {
  // Node's own connection listener (added when the server was made) has given the socket its parser.
  server.on("connection", (socket: TrackedSocket) => {
    const parser = socket.parser;
    if (parser && parser[K_ON_MESSAGE_BEGIN] === null && typeof parser.getCurrentBuffer === "function") {
      parser[K_ON_MESSAGE_BEGIN] = noteRequestMethod;
      noteBodies(parser);
    }
  });
}

/**
 * Notes, in the socket, each read in which the parser hands on body bytes (kOnBody, slot 3): a body may
 * hold lines that look like a request's head, so a read that held one is never read as heads only.
 * Node pools its parsers and keeps this slot, so a parser's callback is wrapped once.
 */
function noteBodies(parser: HttpParser): void {
  const onBody = parser[K_ON_BODY] as BodyCallback | undefined;
  if (typeof onBody !== "function" || onBody[NOTES_BODIES]) return;
  const noting: BodyCallback = function (this: HttpParser, ...args: unknown[]) {
    const socket = this.socket as TrackedSocket | null | undefined;
    if (socket) socket[BODY_READ_AT] = socket.bytesRead;
    return onBody.apply(this, args);
  };
  noting[NOTES_BODIES] = true;
  parser[K_ON_BODY] = noting;
}

/** True when no body has been handed on from the read the socket is in now. */
function noBodyInThisRead(socket: TrackedSocket): boolean {
  return socket[BODY_READ_AT] !== socket.bytesRead;
}

function noteRequestMethod(this: HttpParser): void {
  const socket = this.socket as TrackedSocket | null | undefined;
  if (!socket) return;
  const readAt = socket.bytesRead;
  // One read of a thousand pipelined requests begins each of them: it is copied and scanned once.
  if (socket[REQUEST_START]?.readAt === readAt) return;
  socket[REQUEST_START] = { readAt, method: methodOfLastRequest(this.getCurrentBuffer!().toString("latin1"), undefined, noBodyInThisRead(socket)) };
}

/**
 * True if the refused request was a HEAD: by what the connection noted when the request began in an
 * earlier read, else by the request line before the point the parser failed at in this one. (The
 * failing chunk of a request that began earlier can end in anything, "…%2C" say, that a cut line's
 * scan would take for the start of a method.) A refusal with no read to scan (a request that timed
 * out, 408, or that the client's FIN cut short) takes the noted method; one refused in its body, the
 * method of its head, read whole by then. The byte count tells reads apart only while the parser
 * reads the socket itself: fed through 'data' events (once anything listens for them), reads held
 * while the socket was paused all reach it at one count, so then the failing read is scanned first.
 * A method cut short by the end of a read ("HE") counts as HEAD: llhttp knows no other method that
 * begins with H, so any such request it did not refuse for its method is a HEAD.
 */
export function refusedRequestWasHead(socket: Socket, error: { code?: string; rawPacket?: Buffer; bytesParsed?: number }): boolean {
  if (error.code === "HPE_INVALID_METHOD") return false;
  const tracked = socket as TrackedSocket;
  // Refused in its body (a 408 for a stalled upload, a FIN or a bad chunk): its headers were read whole.
  const inBody = requestInItsBody(socket);
  if (inBody) return inBody.method === "HEAD";
  const noted = tracked[REQUEST_START];
  const beganEarlier = noted !== undefined && tracked.parser?._consumed === true && noted.readAt !== socket.bytesRead;
  if (beganEarlier) return isHead(noted.method);
  const scanned = error.rawPacket?.length ? methodOfLastRequest(error.rawPacket.toString("latin1"), error.bytesParsed, noBodyInThisRead(tracked)) : undefined;
  return isHead(scanned ?? noted?.method);
}

/** The request whose body the connection's parser is reading (its head read whole), if any: a refusal now is that request's. */
export function requestInItsBody(socket: Socket): IncomingMessage | undefined {
  const incoming = (socket as TrackedSocket).parser?.incoming;
  return incoming && !incoming.complete ? incoming : undefined;
}

function isHead(method: string | undefined): boolean {
  return !!method && "HEAD".startsWith(method);
}

const KNOWN_METHODS: readonly string[] = METHODS;
const LONGEST_METHOD = Math.max(...KNOWN_METHODS.map((method) => method.length));

/**
 * The method of the last request line in `chunk` before `end` (its whole length by default). Read
 * backwards a line at a time, so the scan is linear in the chunk: a line ending in " HTTP/x.y" is a
 * request line; the line `end` cuts may also be one cut short. Anything may stand before a request
 * line on its line (the tail of a body the parser skipped), so the method is read from the line's end,
 * and only a method llhttp knows counts: the parser refuses any other before it could fail later. A
 * chunk that starts inside a method ("EAD /x HTTP/1.1") so shows none. With `headsOnly` (the read held
 * no body), a cut line that could begin a method (the "H" of "Host") is a header of the request whose
 * line opens its head, when there is one.
 */
export function methodOfLastRequest(chunk: string, end = chunk.length, headsOnly = false): string | undefined {
  let lineEnd = Math.min(Math.max(end, 0), chunk.length);
  for (let cut = true; ; cut = false) {
    const lineStart = chunk.lastIndexOf("\n", lineEnd - 1) + 1;
    const line = chunk.slice(lineStart, lineEnd);
    const method = cut ? methodOfCutLine(line) : methodOfWholeLine(withoutCr(line));
    if (method !== undefined && cut && headsOnly && lineStart > 0) return requestOpeningTheHead(chunk, lineStart - 1) ?? method;
    if (method !== undefined || lineStart === 0) return method;
    lineEnd = lineStart - 1;
  }
}

/**
 * The method of the request line that opens the head a cut line is in: the line after the last blank
 * line above it (a head holds none, and each bodyless request's head ends with one), or the chunk's
 * first line. Only that opening line counts, as a header may itself end like a request line.
 */
function requestOpeningTheHead(chunk: string, lineEnd: number): string | undefined {
  let opening = "";
  for (;;) {
    const lineStart = chunk.lastIndexOf("\n", lineEnd - 1) + 1;
    const line = withoutCr(chunk.slice(lineStart, lineEnd));
    if (line === "") return methodOfWholeLine(opening);
    opening = line;
    if (lineStart === 0) return methodOfWholeLine(opening);
    lineEnd = lineStart - 1;
  }
}

/** A line as read up to its LF, without the CR before it. */
function withoutCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

/** "… METHOD target HTTP/x.y": the method, or undefined if the line is not a request line. */
function methodOfWholeLine(line: string): string | undefined {
  const versionAt = line.lastIndexOf(" ");
  if (!HTTP_VERSION.test(line.slice(versionAt + 1))) return undefined;
  return methodBeforeTarget(line.slice(0, Math.max(versionAt, 0)));
}

/** A request line the read ends inside of: in its method, after it, in its target or in its version. */
function methodOfCutLine(line: string): string | undefined {
  // Cut between the line's CR and LF: a whole line.
  if (line.endsWith("\r")) return methodOfWholeLine(line.slice(0, -1));
  const lastSpace = line.lastIndexOf(" ");
  if (lastSpace < 0) return knownMethodEnding(upperRunAtEnd(line), KNOWN_METHOD_START);
  const last = line.slice(lastSpace + 1);
  if (HTTP_VERSION_START.test(last)) {
    const method = methodBeforeTarget(line.slice(0, lastSpace));
    if (method !== undefined) return method;
  }
  if (last.includes("\r")) return undefined;
  // In the target ("GET /pat"), else a method begun right behind a body line with spaces in it
  // ('{"prompt":"a cat"}HE'); headsOnly's check then tells a header's capitals from it.
  return knownMethodEnding(upperRunAtEnd(line.slice(0, lastSpace)), KNOWN_METHOD) ?? knownMethodEnding(upperRunAtEnd(last), KNOWN_METHOD_START);
}

/** "… METHOD target": the method before the last space, with a target after it. */
function methodBeforeTarget(text: string): string | undefined {
  const targetAt = text.lastIndexOf(" ");
  if (targetAt < 0 || targetAt === text.length - 1) return undefined;
  return knownMethodEnding(upperRunAtEnd(text.slice(0, targetAt)), KNOWN_METHOD);
}

const HTTP_VERSION = /^HTTP\/\d\.\d$/;
const HTTP_VERSION_START = /^(?:H(?:T(?:T(?:P(?:\/(?:\d(?:\.\d?)?)?)?)?)?)?)?$/;
const KNOWN_METHOD = (method: string) => KNOWN_METHODS.includes(method);
const KNOWN_METHOD_START = (start: string) => KNOWN_METHODS.some((method) => method.startsWith(start));

/** The uppercase letters `text` ends with. */
function upperRunAtEnd(text: string): string {
  let start = text.length;
  while (start > 0 && isUpper(text, start - 1)) start -= 1;
  return text.slice(start);
}

/**
 * The method a run of capitals ends with: the longest end of it that `fits`, since a skipped body may
 * end in capitals too ("…ABCHEAD"). No longer than the longest method, so a long run costs no more.
 */
function knownMethodEnding(run: string, fits: (method: string) => boolean): string | undefined {
  for (let start = Math.max(0, run.length - LONGEST_METHOD); start < run.length; start += 1) if (fits(run.slice(start))) return run.slice(start);
  return undefined;
}

function isUpper(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 65 && code <= 90;
}
