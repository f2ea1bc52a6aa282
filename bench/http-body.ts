// Reading a whole HTTP body, for the benchmarks' own servers (the fake upstream, the floor gateway).
import type { IncomingMessage } from "node:http";

/** A request's (or an answer's) whole body. */
export function readBody(message: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    message.on("data", (chunk: Buffer) => chunks.push(chunk));
    message.on("end", () => resolve(Buffer.concat(chunks)));
    message.on("error", reject);
  });
}
