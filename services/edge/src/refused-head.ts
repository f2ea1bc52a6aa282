import { METHODS, type IncomingMessage } from "node:http";

// Whether a request Node's HTTP parser refused was a HEAD, whose answer must have no body.
// The parser's error (the server's 'clientError' event) carries the chunk it failed in
// (rawPacket) and how far into it it got (bytesParsed): the refused request is the last
// one whose request line stands in that chunk before that point. A request that fails in
// a later read than its request line (a 20-kB path sent in pieces), or with no read at all
// (a 408, a FIN), shows no method there: its answer carries the error body, which a HEAD
// client on this closing connection ignores.

/** The parser error fields Node documents for 'clientError'. */
export interface ParserError {
  code?: string;
  rawPacket?: Buffer;
  bytesParsed?: number;
}

/** True if the refused request was a HEAD: the one in its body if there is one, else the one the failing chunk shows. */
export function refusedRequestWasHead(error: ParserError, inBody: IncomingMessage | undefined): boolean {
  if (inBody) return inBody.method === "HEAD";
  if (error.code === "HPE_INVALID_METHOD" || !error.rawPacket?.length) return false;
  return methodOfLastRequest(error.rawPacket.toString("latin1"), error.bytesParsed) === "HEAD";
}

const KNOWN_METHODS: readonly string[] = METHODS;
const LONGEST_METHOD = Math.max(...KNOWN_METHODS.map((method) => method.length));

/**
 * The method of the last request line in `chunk` before `end` (its whole length by default). Read
 * backwards a line at a time, so the scan is linear in the chunk: a line ending in " HTTP/x.y" is a
 * request line; the line `end` cuts may also be one cut short after its method. Anything may stand
 * before a request line on its line (the tail of a body the parser skipped), so the method is read
 * from the line's end, and only a method llhttp knows counts.
 */
export function methodOfLastRequest(chunk: string, end = chunk.length): string | undefined {
  let lineEnd = Math.min(Math.max(end, 0), chunk.length);
  for (let cut = true; ; cut = false) {
    const lineStart = chunk.lastIndexOf("\n", lineEnd - 1) + 1;
    const line = chunk.slice(lineStart, lineEnd);
    const method = cut ? methodOfCutLine(line) : methodOfWholeLine(withoutCr(line));
    if (method !== undefined || lineStart === 0) return method;
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

/** A request line cut short after its method: in its target or in its version. */
function methodOfCutLine(line: string): string | undefined {
  // Cut between the line's CR and LF: a whole line.
  if (line.endsWith("\r")) return methodOfWholeLine(line.slice(0, -1));
  const lastSpace = line.lastIndexOf(" ");
  if (lastSpace < 0) return undefined;
  if (HTTP_VERSION_START.test(line.slice(lastSpace + 1))) {
    const method = methodBeforeTarget(line.slice(0, lastSpace));
    if (method !== undefined) return method;
  }
  if (line.slice(lastSpace + 1).includes("\r")) return undefined;
  // In the target ("GET /pat").
  return knownMethodEnding(upperRunAtEnd(line.slice(0, lastSpace)));
}

/** "… METHOD target": the method before the last space, with a target after it. */
function methodBeforeTarget(text: string): string | undefined {
  const targetAt = text.lastIndexOf(" ");
  if (targetAt < 0 || targetAt === text.length - 1) return undefined;
  return knownMethodEnding(upperRunAtEnd(text.slice(0, targetAt)));
}

const HTTP_VERSION = /^HTTP\/\d\.\d$/;
const HTTP_VERSION_START = /^(?:H(?:T(?:T(?:P(?:\/(?:\d(?:\.\d?)?)?)?)?)?)?)?$/;

/** The uppercase letters `text` ends with. */
function upperRunAtEnd(text: string): string {
  let start = text.length;
  while (start > 0 && isUpper(text, start - 1)) start -= 1;
  return text.slice(start);
}

/**
 * The method a run of capitals ends with: the longest known method it ends with, since a skipped
 * body may end in capitals too ("…ABCHEAD"). No longer than the longest method, so a long run costs no more.
 */
function knownMethodEnding(run: string): string | undefined {
  for (let start = Math.max(0, run.length - LONGEST_METHOD); start < run.length; start += 1) {
    if (KNOWN_METHODS.includes(run.slice(start))) return run.slice(start);
  }
  return undefined;
}

function isUpper(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 65 && code <= 90;
}
