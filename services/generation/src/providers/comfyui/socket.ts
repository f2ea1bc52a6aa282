
import WebSocket, { type RawData } from "ws";

// ComfyUI's event stream: GET /ws?clientId=<id>, a websocket (the `ws` package, which
// refuses a message over maxPayload by its length, before reading it) carrying JSON
// messages {type, data} and binary frames: a 4-byte big-endian event type, then for a
// preview (type 1) a 4-byte image type (1 JPEG, 2 PNG) and the image; newer servers
// send previews as type 4: a 4-byte length, JSON metadata, then the image.

export type PreviewType = "image/jpeg" | "image/png";

export interface ComfyMessage {
  type: string;
  data: Record<string, unknown>;
}

export interface EventHandlers {
  message(message: ComfyMessage): void;
  preview(bytes: Uint8Array, mediaType: PreviewType, promptId: string | undefined): void;
  /** The socket closed (dropped, or closed by us). */
  closed(): void;
  /** The server sent a message larger than we read: the job fails (the socket is closed too). */
  failed(detail: string): void;
}

const PREVIEW_IMAGE = 1;
const PREVIEW_IMAGE_WITH_METADATA = 4;
const IMAGE_TYPES: Record<number, PreviewType> = { 1: "image/jpeg", 2: "image/png" };
/** A server that takes longer to accept the socket is followed by polling instead. */
const OPEN_TIMEOUT_MS = 10_000;
/** ws's error code for a message over maxPayload (its docs' "Error codes"). */
const MESSAGE_TOO_LARGE = "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH";

export interface SocketOptions {
  baseUrl: string;
  clientId: string;
  headers: Record<string, string>;
  signal: AbortSignal;
  /** The largest message read: the upstream byte limit, which a preview passes only within (preview-guard.ts). */
  maxMessageBytes: number;
}

/** The URL of the event stream under the channel's base URL. */
export function socketUrl(baseUrl: string, clientId: string): URL {
  const url = new URL("ws", baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("clientId", clientId);
  return url;
}

/**
 * The open socket, or null when it cannot be opened (the job is then followed by
 * polling). It is the channel's own server, under its baseUrl, which the operator named:
 * trusted as the guarded fetch trusts requests under baseUrl, on a private address too.
 */
export async function openEvents(options: SocketOptions, handlers: EventHandlers): Promise<WebSocket | null> {
  const url = socketUrl(options.baseUrl, options.clientId);
  options.signal.throwIfAborted();
  // maxPayload: a larger message is refused by the length in its frame header, not read into memory first.
  const socket = new WebSocket(url, { headers: options.headers, maxPayload: options.maxMessageBytes });
  // An "error" without a listener is thrown; each is followed by "close", which the listeners below handle.
  socket.on("error", (error: Error & { code?: string }) => {
    if (error.code !== MESSAGE_TOO_LARGE) return;
    handlers.failed(`ComfyUI's websocket sent a message over ${options.maxMessageBytes} bytes`);
    // A hostile server need not answer our close frame: the socket goes now.
    socket.terminate();
  });
  const opened = await new Promise<boolean>((resolve) => {
    const settle = (open: boolean) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      socket.off("open", onOpen);
      socket.off("close", onClose);
      resolve(open);
    };
    const onAbort = () => settle(false);
    const onOpen = () => settle(true);
    const onClose = () => settle(false);
    const timer = setTimeout(onAbort, OPEN_TIMEOUT_MS);
    options.signal.addEventListener("abort", onAbort, { once: true });
    socket.once("open", onOpen);
    socket.once("close", onClose);
  });
  if (!opened) {
    socket.close();
    options.signal.throwIfAborted();
    return null;
  }
  socket.on("message", (data, isBinary) => {
    // An error thrown out of a listener is uncaught and would end the process: the job is followed by its history instead.
    try {
      dispatch(data, isBinary, handlers);
    } catch {
      socket.close();
    }
  });
  socket.once("close", () => handlers.closed());
  return socket;
}

function dispatch(data: RawData, isBinary: boolean, handlers: EventHandlers): void {
  // ws hands over a Buffer (its default binaryType), the message's fragments joined.
  const bytes = data as Buffer;
  if (!isBinary) {
    const message = parseMessage(bytes.toString("utf8"));
    if (message) handlers.message(message);
    return;
  }
  const preview = parsePreview(bytes);
  if (preview) handlers.preview(preview.bytes, preview.mediaType, preview.promptId);
}

export function parseMessage(text: string): ComfyMessage | undefined {
  try {
    const parsed = JSON.parse(text) as { type?: unknown; data?: unknown };
    if (typeof parsed.type !== "string" || parsed.data === null || typeof parsed.data !== "object") return undefined;
    return { type: parsed.type, data: parsed.data as Record<string, unknown> };
  } catch {
    return undefined;
  }
}

/** A binary preview frame's image, or undefined for other frames (progress text, unencoded previews). */
export function parsePreview(frame: Uint8Array): { bytes: Uint8Array; mediaType: PreviewType; promptId?: string } | undefined {
  if (frame.byteLength < 8) return undefined;
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const event = view.getUint32(0);
  if (event === PREVIEW_IMAGE) {
    const mediaType = IMAGE_TYPES[view.getUint32(4)];
    return mediaType && { bytes: frame.subarray(8), mediaType };
  }
  if (event === PREVIEW_IMAGE_WITH_METADATA) {
    const length = view.getUint32(4);
    if (8 + length > frame.byteLength) return undefined;
    const metadata = parseMetadata(frame.subarray(8, 8 + length));
    const mediaType = metadata.image_type === "image/png" ? "image/png" : "image/jpeg";
    return { bytes: frame.subarray(8 + length), mediaType, promptId: typeof metadata.prompt_id === "string" ? metadata.prompt_id : undefined };
  }
  return undefined;
}

function parseMetadata(bytes: Uint8Array): Record<string, unknown> {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
