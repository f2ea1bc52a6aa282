import { UpstreamFailure } from "../errors.ts";
import { nodeName } from "./graph.ts";
import type { ComfyGraph } from "./workflow.ts";

// ComfyUI's HTTP routes as a job uses them, each through the guarded fetch (byte limits,
// and private addresses only where the channel allows them): POST /prompt, GET
// /history/<id>, GET /view, POST /upload/image, POST /interrupt and POST /queue.

export interface ImageRef {
  filename: string;
  subfolder: string;
  type: string;
}

/** One job's entry of GET /history/<prompt_id>: present once the job has ended. */
export interface HistoryEntry {
  outputs?: Record<string, { images?: ImageRef[] }>;
  status?: { status_str?: string; completed?: boolean; messages?: [string, Record<string, unknown>][] };
}

export class ComfyApi {
  readonly #base: string;

  constructor(
    baseUrl: string,
    private readonly fetch: typeof globalThis.fetch,
    private readonly headers: Record<string, string>,
  ) {
    this.#base = baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`;
  }

  url(path: string): string {
    return new URL(path, this.#base).toString();
  }

  /** Queues the graph; a graph ComfyUI rejects is a failure naming the nodes and their errors. */
  async submit(graph: ComfyGraph, clientId: string, promptId: string, signal: AbortSignal): Promise<string> {
    const response = await this.fetch(this.url("prompt"), {
      method: "POST",
      headers: { ...this.headers, "content-type": "application/json" },
      body: JSON.stringify({ prompt: graph, client_id: clientId, prompt_id: promptId, extra_data: {} }),
      signal,
    });
    const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    // A 200 may list node_errors of nodes no output needs: ComfyUI runs the prompt all the same.
    if (!response.ok) {
      const nodeErrors = describeNodeErrors(graph, body?.node_errors);
      const error = describeError(body?.error);
      throw new UpstreamFailure(`ComfyUI rejected the workflow (${response.status})${error ? `: ${error}` : ""}${nodeErrors ? `; ${nodeErrors}` : ""}`);
    }
    // Servers older than client-chosen ids answer one of their own.
    return typeof body?.prompt_id === "string" ? body.prompt_id : promptId;
  }

  async history(promptId: string, signal: AbortSignal): Promise<HistoryEntry | undefined> {
    const response = await this.fetch(this.url(`history/${encodeURIComponent(promptId)}`), { headers: this.headers, signal });
    if (!response.ok) throw new UpstreamFailure(`ComfyUI answered ${response.status} to GET /history/${promptId}`);
    const body = (await response.json()) as Record<string, HistoryEntry>;
    return body[promptId];
  }

  async view(image: ImageRef, signal: AbortSignal): Promise<Uint8Array> {
    const query = new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type });
    const response = await this.fetch(this.url(`view?${query}`), { headers: this.headers, signal });
    if (!response.ok) throw new UpstreamFailure(`ComfyUI answered ${response.status} to GET /view for ${image.filename}`);
    return new Uint8Array(await response.arrayBuffer());
  }

  /** Uploads an input image (type input, overwrite) and answers the name a LoadImage node takes. */
  async upload(bytes: Uint8Array, mediaType: string, filename: string, signal: AbortSignal): Promise<string> {
    const form = new FormData();
    form.append("image", new Blob([new Uint8Array(bytes)], { type: mediaType }), filename);
    form.append("type", "input");
    form.append("overwrite", "true");
    const response = await this.fetch(this.url("upload/image"), { method: "POST", headers: this.headers, body: form, signal });
    if (!response.ok) throw new UpstreamFailure(`ComfyUI answered ${response.status} to POST /upload/image`);
    const body = (await response.json()) as { name?: unknown; subfolder?: unknown };
    if (typeof body.name !== "string") throw new UpstreamFailure("ComfyUI's POST /upload/image answered no file name");
    return typeof body.subfolder === "string" && body.subfolder ? `${body.subfolder}/${body.name}` : body.name;
  }

  /** Stops the job if it runs (newer servers interrupt only the prompt named) and drops it from the queue if it waits. */
  async cancel(promptId: string, started: boolean): Promise<void> {
    const post = (path: string, body: unknown) =>
      this.fetch(this.url(path), {
        method: "POST",
        headers: { ...this.headers, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS),
      }).catch(() => undefined);
    await Promise.all([started ? post("interrupt", { prompt_id: promptId }) : undefined, post("queue", { delete: [promptId] })]);
  }
}

/** The cancel calls are made after the job's own signal has fired: they get their own short limit. */
const CANCEL_TIMEOUT_MS = 5_000;

/** "node 5 (EmptyLatentImage): Value 99999 bigger than max of 16384: width", for each node ComfyUI names. */
export function describeNodeErrors(graph: ComfyGraph, nodeErrors: unknown): string | undefined {
  if (nodeErrors === null || typeof nodeErrors !== "object") return undefined;
  const parts = Object.entries(nodeErrors as Record<string, { errors?: unknown; class_type?: unknown }>).map(([id, entry]) => {
    const errors = Array.isArray(entry?.errors) ? entry.errors.map(describeError).filter(Boolean) : [];
    return `ComfyUI ${nodeName(graph, id, entry?.class_type)}: ${errors.join("; ") || "invalid"}`;
  });
  return parts.length > 0 ? parts.join("; ") : undefined;
}

/** ComfyUI's {type, message, details} error as one line. */
function describeError(error: unknown): string | undefined {
  if (typeof error === "string") return error;
  if (error === null || typeof error !== "object") return undefined;
  const { message, details } = error as { message?: unknown; details?: unknown };
  const text = typeof message === "string" ? message : "";
  return typeof details === "string" && details ? `${text}: ${details}` : text || undefined;
}
