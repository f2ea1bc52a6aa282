import type { Socket } from "node:net";

// Raw-socket exchanges for the edge's tests of what Node's HTTP parser refuses: the test
// decides where each read ends.

/** Writes each part after the previous one has had time to be read on its own; resolves with all the connection received. */
export function exchange(socket: Socket, parts: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    void (async () => {
      for (const part of parts) {
        socket.write(part);
        await new Promise((wait) => setTimeout(wait, 50));
      }
    })();
  });
}

export function headAndBody(answer: string): { head: string; body: string } {
  const end = answer.indexOf("\r\n\r\n");
  return { head: answer.slice(0, end), body: answer.slice(end + 4) };
}

/** The status of each answer the connection received, in order. */
export function statusesOf(received: string): number[] {
  return [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
}
