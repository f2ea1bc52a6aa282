import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { startSimulator, type Simulator } from "./index.ts";

// The ComfyUI simulator on its own, over raw HTTP and a raw websocket (Node's WebSocket),
// as ComfyUI's server.py answers (the comfyui adapter is tested against it in services/generation).

const STOCK = JSON.parse(readFileSync(fileURLToPath(new URL("../../../config/comfyui/text-to-image.json", import.meta.url)), "utf8")) as Record<
  string,
  { class_type: string; inputs: Record<string, unknown> }
>;
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator("comfyui");
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.reset();
  sim.behave({ steps: 3 });
});

const post = (path: string, body: unknown) => fetch(`${sim.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const graphWith = (changes: (graph: typeof STOCK) => void) => {
  const graph = structuredClone(STOCK);
  changes(graph);
  return graph;
};

type Frame = { type: string; data: Record<string, unknown> } | { binary: Uint8Array };

/** Opens the client's socket and collects its frames until the predicate says the job ended. */
async function listen(clientId: string) {
  const socket = new WebSocket(`${sim.baseUrl.replace("http", "ws")}/ws?clientId=${clientId}`);
  socket.binaryType = "arraybuffer";
  const frames: Frame[] = [];
  let ended: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (ended = resolve));
  socket.addEventListener("message", (event) => {
    const frame: Frame = typeof event.data === "string" ? JSON.parse(event.data) : { binary: new Uint8Array(event.data as ArrayBuffer) };
    frames.push(frame);
    if ("type" in frame && ["execution_success", "execution_error", "execution_interrupted"].includes(frame.type)) ended();
  });
  await new Promise((resolve) => socket.addEventListener("open", resolve, { once: true }));
  return { frames, done, close: () => socket.close() };
}

describe("the ComfyUI simulator (HTTP + websocket)", () => {
  it("runs a queued graph, reporting on the client's socket, and keeps its images for /history and /view", async () => {
    const socket = await listen("client-a");
    const graph = graphWith((g) => {
      g["6"]!.inputs.text = "a harbour";
      Object.assign(g["5"]!.inputs, { width: 640, height: 384, batch_size: 2 });
    });
    const queued = await post("/prompt", { prompt: graph, client_id: "client-a", prompt_id: "p-1" });
    expect(queued.status).toBe(200);
    expect(await queued.json()).toEqual({ prompt_id: "p-1", number: 0, node_errors: {} });
    await socket.done;
    socket.close();
    const types = socket.frames.map((frame) => ("type" in frame ? frame.type : "binary"));
    expect(types[0]).toBe("status");
    expect(types).toEqual(expect.arrayContaining(["execution_start", "execution_cached", "executing", "progress", "binary", "executed", "execution_success"]));
    const progress = socket.frames.flatMap((frame) => ("type" in frame && frame.type === "progress" ? [frame.data] : []));
    expect(progress.map((data) => [data.value, data.max, data.node, data.prompt_id])).toEqual([
      [1, 3, "3", "p-1"],
      [2, 3, "3", "p-1"],
      [3, 3, "3", "p-1"],
    ]);
    const preview = socket.frames.find((frame): frame is { binary: Uint8Array } => "binary" in frame)!.binary;
    expect([...preview.subarray(0, 8)]).toEqual([0, 0, 0, 1, 0, 0, 0, 1]);
    expect((await sharp(preview.subarray(8)).metadata()).format).toBe("jpeg");

    const history = (await (await fetch(`${sim.baseUrl}/history/p-1`)).json()) as Record<string, { outputs: Record<string, { images: { filename: string; subfolder: string; type: string }[] }>; status: { status_str: string } }>;
    expect(history["p-1"]!.status.status_str).toBe("success");
    const images = history["p-1"]!.outputs["9"]!.images;
    expect(images).toHaveLength(2);
    const view = await fetch(`${sim.baseUrl}/view?${new URLSearchParams({ filename: images[0]!.filename, subfolder: "", type: "output" })}`);
    const meta = await sharp(Buffer.from(await view.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 640, 384]);
    expect(await (await fetch(`${sim.baseUrl}/history/unknown`)).json()).toEqual({});
  });

  it("answers 400 with node_errors for a graph ComfyUI would not run", async () => {
    const bad = await post("/prompt", { prompt: graphWith((g) => ((g["3"]!.inputs.model = ["40", 0]), (g["5"]!.inputs.width = 99_999))), client_id: "c" });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { type: string }; node_errors: Record<string, { class_type: string; errors: { type: string; message: string }[] }> };
    expect(body.error.type).toBe("prompt_outputs_failed_validation");
    expect(body.node_errors["3"]).toMatchObject({ class_type: "KSampler", errors: [{ type: "required_input_missing" }] });
    expect(body.node_errors["5"]!.errors[0]).toMatchObject({ type: "value_bigger_than_max", message: "Value 99999 bigger than max of 16384" });
    const unknown = await post("/prompt", { prompt: graphWith((g) => (g["8"]!.class_type = "FancyDecode")) });
    expect(await unknown.json()).toMatchObject({ error: { type: "missing_node_type" }, node_errors: {} });
  });

  it("ends a job with execution_error on the sampler when told to fail", async () => {
    const socket = await listen("client-f");
    await post("/prompt", { prompt: graphWith((g) => (g["6"]!.inputs.text = "x [sim:fail]")), client_id: "client-f", prompt_id: "p-f" });
    await socket.done;
    socket.close();
    const error = socket.frames.find((frame) => "type" in frame && frame.type === "execution_error") as { data: Record<string, unknown> };
    expect(error.data).toMatchObject({ prompt_id: "p-f", node_id: "3", node_type: "KSampler", exception_type: "torch.OutOfMemoryError" });
    const history = (await (await fetch(`${sim.baseUrl}/history/p-f`)).json()) as Record<string, { status: { status_str: string; messages: [string, unknown][] } }>;
    expect(history["p-f"]!.status.status_str).toBe("error");
    expect(history["p-f"]!.status.messages.map(([type]) => type)).toContain("execution_error");
  });

  it("stops the running prompt on POST /interrupt and drops a waiting one on POST /queue {delete}", async () => {
    const socket = await listen("client-i");
    await post("/prompt", { prompt: graphWith((g) => (g["6"]!.inputs.text = "x [sim:hang]")), client_id: "client-i", prompt_id: "p-hang" });
    await post("/prompt", { prompt: STOCK, client_id: "client-i", prompt_id: "p-wait" });
    const queue = (await (await fetch(`${sim.baseUrl}/queue`)).json()) as { queue_pending: unknown[][] };
    expect(queue.queue_pending.map((row) => row[1])).toEqual(["p-wait"]);
    await post("/queue", { delete: ["p-wait"] });
    await post("/interrupt", { prompt_id: "p-hang" });
    await socket.done;
    socket.close();
    expect(socket.frames.some((frame) => "type" in frame && frame.type === "execution_interrupted")).toBe(true);
    expect(await (await fetch(`${sim.baseUrl}/history/p-wait`)).json()).toEqual({});
    expect([sim.count("interrupt"), sim.count("queue")]).toEqual([1, 1]);
  });

  it("takes uploads for LoadImage nodes, renaming a second file of the same name unless told to overwrite", async () => {
    const png = await sharp({ create: { width: 32, height: 24, channels: 3, background: "#336699" } }).png().toBuffer();
    const upload = async (overwrite: boolean) => {
      const form = new FormData();
      form.append("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "in.png");
      form.append("type", "input");
      if (overwrite) form.append("overwrite", "true");
      return (await fetch(`${sim.baseUrl}/upload/image`, { method: "POST", body: form })).json();
    };
    expect(await upload(true)).toEqual({ name: "in.png", subfolder: "", type: "input" });
    expect(await upload(false)).toEqual({ name: "in (1).png", subfolder: "", type: "input" });
    expect(await upload(true)).toEqual({ name: "in.png", subfolder: "", type: "input" });
    const view = await fetch(`${sim.baseUrl}/view?filename=in.png&type=input`);
    expect(view.status).toBe(200);
  });
});
