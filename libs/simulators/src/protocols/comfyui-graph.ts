// The checks ComfyUI makes on a queued graph before running it (execution.py
// validate_prompt), for the node types a stock workflow uses: each class is known, each
// link points at a node of the graph, widget values are in range, LoadImage files exist,
// and at least one output node is reached. The error shapes are ComfyUI's own.

export type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>;

interface ComfyError {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

export type GraphCheck =
  | { ok: true; outputs: string[] }
  | { ok: false; error: ComfyError; nodeErrors: Record<string, { errors: ComfyError[]; dependent_outputs: string[]; class_type: string }> };

const OUTPUT_NODES = new Set(["SaveImage", "PreviewImage"]);
const KNOWN = new Set([
  ...OUTPUT_NODES,
  "KSampler",
  "KSamplerAdvanced",
  "CheckpointLoaderSimple",
  "EmptyLatentImage",
  "CLIPTextEncode",
  "VAEDecode",
  "VAEEncode",
  "VAEEncodeForInpaint",
  "LoadImage",
  "LoadImageMask",
]);
/** Widget ranges of the stock nodes (EmptyLatentImage's MAX_RESOLUTION is 16384). */
const RANGES: Record<string, Record<string, [number, number]>> = {
  EmptyLatentImage: { width: [16, 16384], height: [16, 16384], batch_size: [1, 4096] },
  KSampler: { steps: [1, 10000], seed: [0, Number.MAX_SAFE_INTEGER], cfg: [0, 100], denoise: [0, 1] },
};

export function validateGraph(graph: Graph, uploaded: (name: string) => boolean): GraphCheck {
  const ids = Object.keys(graph);
  for (const id of ids) {
    const node = graph[id];
    if (!node || typeof node.class_type !== "string" || typeof node.inputs !== "object" || node.inputs === null) {
      return refused({ type: "invalid_prompt", message: "Cannot execute because a node is missing the class_type property.", details: `Node ID '#${id}'`, extra_info: {} });
    }
    if (!KNOWN.has(node.class_type)) {
      return refused({ type: "missing_node_type", message: `Node '${node.class_type}' not found. The custom node may not be installed.`, details: `Node ID '#${id}'`, extra_info: { node_id: id, class_type: node.class_type } });
    }
  }
  const outputs = ids.filter((id) => OUTPUT_NODES.has(graph[id]!.class_type));
  if (outputs.length === 0) return refused({ type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} });
  const nodeErrors: Extract<GraphCheck, { ok: false }>["nodeErrors"] = {};
  for (const id of ids) {
    const errors = nodeProblems(graph, id, uploaded);
    if (errors.length > 0) nodeErrors[id] = { errors, dependent_outputs: outputs, class_type: graph[id]!.class_type };
  }
  if (Object.keys(nodeErrors).length > 0) {
    return { ok: false, error: { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: "", extra_info: {} }, nodeErrors };
  }
  return { ok: true, outputs };
}

function nodeProblems(graph: Graph, id: string, uploaded: (name: string) => boolean): ComfyError[] {
  const node = graph[id]!;
  const errors: ComfyError[] = [];
  for (const [input, value] of Object.entries(node.inputs)) {
    if (Array.isArray(value) && !graph[String(value[0])]) {
      errors.push({ type: "required_input_missing", message: "Required input is missing", details: `${input} (linked node ${String(value[0])} does not exist)`, extra_info: { input_name: input } });
    }
  }
  for (const [input, [min, max]] of Object.entries(RANGES[node.class_type] ?? {})) {
    const value = node.inputs[input];
    if (typeof value !== "number") continue;
    if (value > max) errors.push({ type: "value_bigger_than_max", message: `Value ${value} bigger than max of ${max}`, details: `${input}`, extra_info: { input_name: input } });
    if (value < min) errors.push({ type: "value_smaller_than_min", message: `Value ${value} smaller than min of ${min}`, details: `${input}`, extra_info: { input_name: input } });
  }
  if ((node.class_type === "LoadImage" || node.class_type === "LoadImageMask") && !uploaded(String(node.inputs.image))) {
    errors.push({ type: "custom_validation_failed", message: "Custom validation failed for node", details: `image - Invalid image file: ${String(node.inputs.image)}`, extra_info: { input_name: "image" } });
  }
  return errors;
}

const refused = (error: ComfyError): GraphCheck => ({ ok: false, error, nodeErrors: {} });
