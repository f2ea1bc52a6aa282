import { createServer } from "node:net";

/** True when nothing listens on 127.0.0.1:port (a process could bind it now). */
export async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  // Not events.once: it rejects on "error", which here is an answer (the port is taken).
  const ok = await new Promise<boolean>((resolve) => {
    server.once("listening", () => resolve(true));
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1");
  });
  if (ok) await new Promise<void>((resolve) => server.close(() => resolve()));
  return ok;
}
