import { afterEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import sharp from "sharp";
import { LIGHTHOUSE_REQUEST, localComfyChannel } from "./test-channel.ts";
import { FAILED_MESSAGE, generateOnChannel, type UpstreamSettings } from "../upstream.ts";

// The comfyui adapter over real HTTP and a real websocket against a hostile ComfyUI: a
// local node:http server that accepts the websocket upgrade itself (RFC 6455 handshake)
// so that it can send one frame's header declaring a message far over the upstream byte
// limit, then only a few bytes of it. The job must fail as an upstream failure (which
// the edge answers 502, not charged: services/stack/src/comfyui-channel.test.ts) as soon
// as the header is read, not wait to buffer the message; and the socket must be closed.
// The server's history would answer the job's image, so a fall back to polling would
// show as a success.

const LIMIT = 1024 * 1024;
const settings: UpstreamSettings = { jobTimeoutMs: 600_000, allowPrivateUpstreams: false, maxUpstreamBytes: LIMIT };
/** Over the limit, under what Node's WebSocket or ws would hold by default: only our cap refuses it. */
const DECLARED = 64 * LIMIT;
const WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A binary frame's header (FIN, opcode 2, unmasked, 64-bit length) declaring `length` bytes, and the first bytes of its payload. */
function oversizedFrameStart(length: number): Buffer {
  const header = Buffer.alloc(10);
  header[0] = 0x82;
  header[1] = 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  return Buffer.concat([header, Buffer.alloc(16)]);
}

interface HostileComfy {
  baseUrl: string;
  /** Settles once the client has hung up the websocket. */
  socketClosed: Promise<void>;
  /** Bytes of the websocket frame the server sent. */
  sentBytes: number;
}

async function hostileComfy(): Promise<HostileComfy> {
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png().toBuffer();
  let promptId = "";
  let socket: Duplex | undefined;
  let markClosed!: () => void;
  const comfy: HostileComfy = { baseUrl: "", socketClosed: new Promise((resolve) => (markClosed = resolve)), sentBytes: 0 };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://comfy");
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const json = (body: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.method === "POST" && url.pathname === "/prompt") {
        promptId = JSON.parse(Buffer.concat(chunks).toString("utf8")).prompt_id;
        json({ prompt_id: promptId, number: 1, node_errors: {} });
        const frame = oversizedFrameStart(DECLARED);
        comfy.sentBytes = frame.byteLength;
        return socket?.write(frame);
      }
      if (url.pathname.startsWith("/history/")) {
        return json({ [promptId]: { outputs: { "9": { images: [{ filename: "a.png", subfolder: "", type: "output" }] } }, status: { status_str: "success", completed: true, messages: [] } } });
      }
      if (url.pathname === "/view") return res.writeHead(200, { "content-type": "image/png" }).end(png);
      if (req.method === "POST") return json({});
      res.writeHead(404).end();
    });
  });
  server.on("upgrade", (req, raw: Socket) => {
    const accept = createHash("sha1").update(`${req.headers["sec-websocket-key"]}${WEBSOCKET_GUID}`).digest("base64");
    raw.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    raw.resume();
    // The client's end of the connection, however it goes: a FIN, a reset, or both sides closed.
    for (const event of ["end", "error", "close"]) raw.once(event, markClosed);
    raw.on("end", () => raw.end());
    socket = raw;
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  comfy.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return comfy;
}


describe("the comfyui websocket's message cap (HTTP + a real websocket, a local node:http server doing the upgrade)", () => {
  it("fails the job as an upstream failure on a message declared over the byte limit, without reading it, and closes the socket", async () => {
    const comfy = await hostileComfy();
    // The job's own limit stays far off: the failure comes from the frame's header alone.
    const outcome = await generateOnChannel(localComfyChannel(comfy.baseUrl), undefined, LIGHTHOUSE_REQUEST, AbortSignal.timeout(600_000), settings);
    expect(outcome).toMatchObject({ ok: false, kind: "failed", message: FAILED_MESSAGE });
    expect(!outcome.ok && outcome.detail).toContain(`ComfyUI's websocket sent a message over ${LIMIT} bytes`);
    // Of the message declared, the server sent a header and a few bytes: nothing more was waited for.
    expect(comfy.sentBytes).toBeLessThan(LIMIT);
    await comfy.socketClosed;
  });
});
