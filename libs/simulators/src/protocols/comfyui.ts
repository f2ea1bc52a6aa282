import { randomUUID } from "node:crypto";
import sharp from "sharp";
import { WebSocketServer, type WebSocket } from "ws";
import type { SimReply, SimRequest, SimulatorCore } from "../server.ts";
import { malformedReply } from "../server.ts";
import { asRecord } from "./common.ts";
import { validateGraph, type Graph } from "./comfyui-graph.ts";

// ComfyUI's server as a client sees it (its server.py and execution.py): POST /prompt
// queues an API-format graph (validated: a bad graph is 400 with node_errors), one job
// runs at a time, and its events go to the websocket GET /ws?clientId= of the client
// that queued it: JSON {type, data} messages (status, execution_start, execution_cached,
// executing, progress, executed, execution_success, execution_error,
// execution_interrupted) and binary previews (4-byte big-endian event type 1, 4-byte
// image type 1 = JPEG, the JPEG). GET /history/<id> holds an ended job, GET /view its
// images, POST /upload/image takes input files, POST /interrupt stops the running job and
// POST /queue {delete} drops waiting ones.
//
// Steered like the other simulators: mode "fail" (or [sim:fail] in a prompt text) ends
// the job with execution_error on the sampler, "hang" never ends it (until interrupted),
// "malformed" answers /prompt with broken JSON; the latency is spread over the steps;
// behaviour.steps, behaviour.dropSocketAtStep and behaviour.refuseSockets shape the run.

const PREVIEW_IMAGE = 1;
const JPEG = 1;
const PREVIEW_SIDE = 64;
const MAX_STEPS = 100;

interface Job {
  number: number;
  id: string;
  graph: Graph;
  clientId: string | undefined;
  outputs: string[];
  interrupt: AbortController;
}

interface HistoryEntry {
  prompt: unknown[];
  outputs: Record<string, { images: ImageRef[] }>;
  status: { status_str: "success" | "error"; completed: boolean; messages: [string, Record<string, unknown>][] };
  meta: Record<string, unknown>;
}

interface ImageRef {
  filename: string;
  subfolder: string;
  type: "output" | "input" | "temp";
}

export class ComfyState {
  readonly sockets = new Map<string, WebSocket>();
  readonly uploads = new Map<string, Buffer>();
  readonly outputs = new Map<string, Buffer>();
  readonly history = new Map<string, HistoryEntry>();
  readonly pending: Job[] = [];
  running: Job | undefined;
  #number = 0;
  #files = 0;
  #chain: Promise<void> = Promise.resolve();

  constructor(private readonly sim: SimulatorCore) {}

  queue(job: Omit<Job, "number" | "interrupt">): Job {
    const queued = { ...job, number: this.#number++, interrupt: new AbortController() };
    this.pending.push(queued);
    this.broadcastStatus();
    this.#chain = this.#chain.then(() => this.#runNext(queued));
    return queued;
  }

  send(clientId: string | undefined, type: string, data: Record<string, unknown>): void {
    const socket = clientId ? this.sockets.get(clientId) : undefined;
    if (socket?.readyState === 1) socket.send(JSON.stringify({ type, data }));
  }

  broadcastStatus(): void {
    const message = JSON.stringify({ type: "status", data: { status: { exec_info: { queue_remaining: this.pending.length + (this.running ? 1 : 0) } } } });
    for (const socket of this.sockets.values()) if (socket.readyState === 1) socket.send(message);
  }

  nextFilename(prefix: string): string {
    this.#files += 1;
    return `${prefix}_${String(this.#files).padStart(5, "0")}_.png`;
  }

  async #runNext(job: Job): Promise<void> {
    const index = this.pending.indexOf(job);
    if (index < 0) return; // deleted from the queue while it waited
    this.pending.splice(index, 1);
    this.running = job;
    try {
      await runJob(this.sim, this, job);
    } finally {
      this.running = undefined;
      this.broadcastStatus();
    }
  }
}

export function comfyRoutes(sim: SimulatorCore, state: ComfyState) {
  return [
    { name: "prompt", method: "POST" as const, pattern: /^\/(?:api\/)?prompt$/, handle: (req: SimRequest) => submit(sim, state, req) },
    {
      name: "queue-info",
      method: "GET" as const,
      pattern: /^\/(?:api\/)?prompt$/,
      handle: async (): Promise<SimReply> => ({ status: 200, json: { exec_info: { queue_remaining: state.pending.length + (state.running ? 1 : 0) } } }),
    },
    {
      name: "history",
      method: "GET" as const,
      pattern: /^\/(?:api\/)?history\/([^/]+)$/,
      handle: async (_req: SimRequest, match: RegExpExecArray): Promise<SimReply> => {
        const id = decodeURIComponent(match[1]!);
        const entry = state.history.get(id);
        return { status: 200, json: entry ? { [id]: entry } : {} };
      },
    },
    { name: "view", method: "GET" as const, pattern: /^\/(?:api\/)?view$/, handle: async (req: SimRequest) => view(state, req) },
    { name: "upload", method: "POST" as const, pattern: /^\/(?:api\/)?upload\/image$/, handle: (req: SimRequest) => upload(state, req) },
    {
      name: "interrupt",
      method: "POST" as const,
      pattern: /^\/(?:api\/)?interrupt$/,
      handle: async (req: SimRequest): Promise<SimReply> => {
        // Newer servers interrupt only the prompt named, when one is; older ones whatever runs.
        const named = asRecord(req.body).prompt_id;
        if (state.running && (typeof named !== "string" || named === state.running.id)) state.running.interrupt.abort();
        return { status: 200, text: "", contentType: "text/plain" };
      },
    },
    {
      name: "queue",
      method: "POST" as const,
      pattern: /^\/(?:api\/)?queue$/,
      handle: async (req: SimRequest): Promise<SimReply> => {
        const body = asRecord(req.body);
        const doomed = new Set(body.clear === true ? state.pending.map((job) => job.id) : Array.isArray(body.delete) ? body.delete.map(String) : []);
        for (let i = state.pending.length - 1; i >= 0; i -= 1) if (doomed.has(state.pending[i]!.id)) state.pending.splice(i, 1);
        state.broadcastStatus();
        return { status: 200, text: "", contentType: "text/plain" };
      },
    },
    {
      name: "queue-list",
      method: "GET" as const,
      pattern: /^\/(?:api\/)?queue$/,
      handle: async (): Promise<SimReply> => {
        const row = (job: Job) => [job.number, job.id, job.graph, { client_id: job.clientId }, job.outputs];
        return { status: 200, json: { queue_running: state.running ? [row(state.running)] : [], queue_pending: state.pending.map(row) } };
      },
    },
  ];
}

/** GET /ws?clientId=: the socket the client's job events go to; it starts with the queue's status. */
export function acceptSockets(sim: SimulatorCore, state: ComfyState, readKey: (headers: Record<string, unknown>) => string | undefined): void {
  const server = new WebSocketServer({ noServer: true });
  sim.onUpgrade((req, socket, head) => {
    const url = new URL(req.url ?? "/", sim.origin);
    const expected = sim.behaviour.apiKey;
    const status = !/^\/(?:api\/)?ws$/.test(url.pathname) ? 404 : expected !== undefined && readKey(req.headers) !== expected ? 401 : sim.behaviour.refuseSockets ? 503 : 0;
    if (status) {
      socket.end(`HTTP/1.1 ${status} Refused\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    server.handleUpgrade(req, socket, head, (ws) => {
      sim.stats.byRoute.ws = (sim.stats.byRoute.ws ?? 0) + 1;
      const sid = url.searchParams.get("clientId") || randomUUID().replaceAll("-", "");
      state.sockets.get(sid)?.terminate();
      state.sockets.set(sid, ws);
      ws.on("close", () => state.sockets.get(sid) === ws && state.sockets.delete(sid));
      ws.send(JSON.stringify({ type: "status", data: { status: { exec_info: { queue_remaining: state.pending.length + (state.running ? 1 : 0) } }, sid } }));
    });
  });
  sim.closing.addEventListener("abort", () => {
    for (const socket of state.sockets.values()) socket.terminate();
    server.close();
  });
}

async function submit(sim: SimulatorCore, state: ComfyState, req: SimRequest): Promise<SimReply> {
  const body = asRecord(req.body);
  if (!("prompt" in body)) return { status: 400, json: { error: { type: "no_prompt", message: "No prompt provided", details: "", extra_info: {} }, node_errors: {} } };
  const graph = asRecord(body.prompt) as Graph;
  sim.stats.lastWorkflow = graph;
  if (sim.effective(promptText(graph)).mode === "malformed") return malformedReply();
  const checked = validateGraph(graph, (name) => state.uploads.has(name));
  if (!checked.ok) return { status: 400, json: { error: checked.error, node_errors: checked.nodeErrors } };
  noteEditInputs(sim, graph, state);
  const id = typeof body.prompt_id === "string" && body.prompt_id ? body.prompt_id : randomUUID();
  const clientId = typeof body.client_id === "string" ? body.client_id : undefined;
  const job = state.queue({ id, graph, clientId, outputs: checked.outputs });
  return { status: 200, json: { prompt_id: id, number: job.number, node_errors: {} } };
}

/** An edit's inputs: the LoadImage files the graph reads, and whether a LoadImageMask reads one. */
function noteEditInputs(sim: SimulatorCore, graph: Graph, state: ComfyState): void {
  const uploaded = (type: string) => Object.values(graph).filter((node) => node.class_type === type && state.uploads.has(String(node.inputs.image))).length;
  const images = uploaded("LoadImage");
  if (images > 0) sim.sawInputs(images, uploaded("LoadImageMask") > 0);
}

async function runJob(sim: SimulatorCore, state: ComfyState, job: Job): Promise<void> {
  const { id, graph, clientId } = job;
  const send = (type: string, data: Record<string, unknown>) => state.send(clientId, type, { ...data, prompt_id: id });
  const messages: [string, Record<string, unknown>][] = [];
  const record = (type: string, data: Record<string, unknown>) => {
    messages.push([type, { ...data, prompt_id: id }]);
    send(type, data);
  };
  record("execution_start", { timestamp: Date.now() });
  record("execution_cached", { nodes: [], timestamp: Date.now() });
  const text = promptText(graph);
  const effective = sim.effective(text);
  const executed: string[] = [];
  const outputs: HistoryEntry["outputs"] = {};
  const end = (status: "success" | "error") => {
    state.history.set(id, { prompt: [job.number, id, graph, { client_id: clientId }, job.outputs], outputs, status: { status_str: status, completed: status === "success", messages }, meta: {} });
  };
  for (const nodeId of executionOrder(graph)) {
    const node = graph[nodeId]!;
    send("executing", { node: nodeId, display_node: nodeId });
    if (node.class_type.startsWith("KSampler")) {
      const outcome = await sample(sim, state, job, nodeId, effective.delayMs, text);
      if (outcome === "interrupted" || (outcome === "done" && effective.mode === "fail")) {
        const failed = outcome === "interrupted"
          ? { type: "execution_interrupted", data: { node_id: nodeId, node_type: node.class_type, executed, timestamp: Date.now() } }
          : { type: "execution_error", data: oomError(nodeId, node.class_type, executed) };
        record(failed.type, failed.data);
        end("error");
        return;
      }
    }
    if (node.class_type === "SaveImage") {
      const images = await saveImages(sim, state, graph, node, text);
      outputs[nodeId] = { images };
      send("executed", { node: nodeId, display_node: nodeId, output: { images } });
    }
    executed.push(nodeId);
  }
  record("execution_success", { timestamp: Date.now() });
  end("success");
  send("executing", { node: null });
}

/** The sampler's steps, each a progress message and a JPEG preview; "interrupted" when POST /interrupt stopped it. */
async function sample(sim: SimulatorCore, state: ComfyState, job: Job, nodeId: string, delayMs: number, text: string): Promise<"done" | "interrupted"> {
  const node = job.graph[nodeId]!;
  const steps = Math.min(MAX_STEPS, sim.behaviour.steps ?? positiveInt(node.inputs.steps, 20));
  const preview = hostilePreview(sim.behaviour.hostilePreviews) ?? (await previewFrame(text));
  const hang = sim.effective(text).mode === "hang";
  for (let step = 1; step <= steps || hang; step += 1) {
    if (await pause(hang ? 50 : delayMs / steps, job.interrupt.signal, sim.closing)) return "interrupted";
    if (hang) continue;
    const socket = job.clientId ? state.sockets.get(job.clientId) : undefined;
    const raw = sim.behaviour.rawMessage;
    if (raw !== undefined && step === 1 && socket?.readyState === 1) socket.send(raw.replaceAll("{prompt_id}", job.id));
    if (sim.behaviour.infiniteProgress && socket?.readyState === 1) {
      socket.send(`{"type":"progress","data":{"value":1e999,"max":1e999,"prompt_id":${JSON.stringify(job.id)},"node":${JSON.stringify(nodeId)}}}`);
    }
    state.send(job.clientId, "progress", { value: step, max: steps, prompt_id: job.id, node: nodeId });
    if (socket?.readyState === 1) socket.send(preview);
    if (step === sim.behaviour.dropSocketAtStep) socket?.terminate();
  }
  return "done";
}

async function saveImages(sim: SimulatorCore, state: ComfyState, graph: Graph, node: Graph[string], text: string): Promise<ImageRef[]> {
  const { width, height, batch } = await outputShape(graph, state);
  const prefix = typeof node.inputs.filename_prefix === "string" ? node.inputs.filename_prefix : "ComfyUI";
  const effective = sim.effective(text);
  return Promise.all(
    Array.from({ length: batch }, async (_, index) => {
      const png = await sim.render({ width, height }, effective, `${text}#${index}`);
      const filename = state.nextFilename(prefix);
      state.outputs.set(`output/${filename}`, png);
      return { filename, subfolder: "", type: "output" as const };
    }),
  );
}

/** The image size and count: an EmptyLatentImage's, or an edit's input image at batch 1. */
async function outputShape(graph: Graph, state: ComfyState): Promise<{ width: number; height: number; batch: number }> {
  const latent = Object.values(graph).find((node) => node.class_type === "EmptyLatentImage");
  if (latent) return { width: positiveInt(latent.inputs.width, 512), height: positiveInt(latent.inputs.height, 512), batch: positiveInt(latent.inputs.batch_size, 1) };
  const loaded = Object.values(graph).find((node) => node.class_type === "LoadImage");
  const bytes = loaded && state.uploads.get(String(loaded.inputs.image));
  if (bytes) {
    const meta = await sharp(bytes).metadata();
    return { width: meta.width ?? 512, height: meta.height ?? 512, batch: 1 };
  }
  return { width: 512, height: 512, batch: 1 };
}

function view(state: ComfyState, req: SimRequest): SimReply {
  const query = req.url.searchParams;
  const filename = query.get("filename") ?? "";
  if (!filename || filename.startsWith("/") || filename.includes("..")) return { status: 400, text: "", contentType: "text/plain" };
  const type = query.get("type") || "output";
  const subfolder = query.get("subfolder") ?? "";
  const bytes = type === "input" ? state.uploads.get(subfolder ? `${subfolder}/${filename}` : filename) : state.outputs.get(`${type}/${subfolder ? `${subfolder}/` : ""}${filename}`);
  if (!bytes) return { status: 404, text: "", contentType: "text/plain" };
  return { status: 200, bytes, contentType: "image/png" };
}

async function upload(state: ComfyState, req: SimRequest): Promise<SimReply> {
  const type = String(req.headers["content-type"] ?? "");
  const form = type.startsWith("multipart/form-data")
    ? await new Request("http://simulator.local/", { method: "POST", headers: { "content-type": type }, body: new Uint8Array(req.raw) }).formData().catch(() => null)
    : null;
  const image = form?.get("image");
  if (!form || !image || typeof image === "string" || !image.name) return { status: 400, text: "", contentType: "text/plain" };
  const subfolder = String(form.get("subfolder") ?? "");
  const uploadType = String(form.get("type") ?? "input");
  let name = image.name;
  const key = () => (subfolder ? `${subfolder}/${name}` : name);
  if (form.get("overwrite") !== "true" && form.get("overwrite") !== "1") {
    for (let i = 1; state.uploads.has(key()); i += 1) name = image.name.replace(/(\.[^.]*)?$/, ` (${i})$1`);
  }
  state.uploads.set(key(), Buffer.from(await image.arrayBuffer()));
  return { status: 200, json: { name, subfolder, type: uploadType } };
}

/** The graph's prompt texts (CLIPTextEncode), which carry the simulator's directives. */
function promptText(graph: Graph): string {
  return Object.values(graph)
    .filter((node) => node.class_type === "CLIPTextEncode" && typeof node.inputs.text === "string")
    .map((node) => node.inputs.text as string)
    .join(" | ");
}

/** Every node after the nodes it reads from, as ComfyUI executes them. */
function executionOrder(graph: Graph): string[] {
  const done = new Set<string>();
  const visit = (id: string, path: Set<string>) => {
    if (done.has(id) || path.has(id) || !graph[id]) return;
    path.add(id);
    for (const value of Object.values(graph[id].inputs)) if (Array.isArray(value)) visit(String(value[0]), path);
    done.add(id);
  };
  for (const id of Object.keys(graph)) visit(id, new Set());
  return [...done];
}

function oomError(nodeId: string, nodeType: string, executed: string[]): Record<string, unknown> {
  return {
    node_id: nodeId,
    node_type: nodeType,
    executed,
    exception_message: "Allocation on device would exceed allowed memory. (out of memory)",
    exception_type: "torch.OutOfMemoryError",
    traceback: ['  File "execution.py", line 1, in execute\n'],
    current_inputs: {},
    current_outputs: {},
    timestamp: Date.now(),
  };
}

/** One preview frame: event type 1, image type 1 (JPEG), a small JPEG. */
async function previewFrame(text: string): Promise<Buffer> {
  const shade = [...text].reduce((sum, char) => (sum + char.charCodeAt(0)) % 200, 40);
  const jpeg = await sharp({ create: { width: PREVIEW_SIDE, height: PREVIEW_SIDE, channels: 3, background: { r: shade, g: 90, b: 160 } } }).jpeg().toBuffer();
  const header = Buffer.alloc(8);
  header.writeUInt32BE(PREVIEW_IMAGE, 0);
  header.writeUInt32BE(JPEG, 4);
  return Buffer.concat([header, jpeg]);
}

/** A preview frame a hostile server sends: a JPEG's first bytes padded to `bytes`, or text claiming to be a JPEG. */
function hostilePreview(hostile: { bytes: number; image: boolean } | undefined): Buffer | undefined {
  if (!hostile) return undefined;
  const header = Buffer.alloc(8);
  header.writeUInt32BE(PREVIEW_IMAGE, 0);
  header.writeUInt32BE(JPEG, 4);
  const payload = Buffer.alloc(hostile.bytes, hostile.image ? 0 : "not an image ");
  if (hostile.image) payload.set([0xff, 0xd8, 0xff, 0xe0]);
  return Buffer.concat([header, payload]);
}

/** Waits; true when interrupted (or the simulator closes) first. */
function pause(ms: number, interrupt: AbortSignal, closing: AbortSignal): Promise<boolean> {
  if (interrupt.aborted || closing.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const stop = () => finish(true);
    const timer = setTimeout(() => finish(false), ms);
    function finish(stopped: boolean) {
      clearTimeout(timer);
      interrupt.removeEventListener("abort", stop);
      closing.removeEventListener("abort", stop);
      resolve(stopped);
    }
    interrupt.addEventListener("abort", stop, { once: true });
    closing.addEventListener("abort", stop, { once: true });
  });
}

const positiveInt = (value: unknown, fallback: number) => (typeof value === "number" && Number.isInteger(value) && value > 0 ? value : fallback);
