import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";

// A ComfyUI channel's workflow (docs/providers.md "Connect your GPU box"): a graph in
// ComfyUI's API format (node id → {class_type, inputs}) read from a file beside the
// models file, and which node inputs take the job's values. Checked once, at start: a
// mapping naming a node or input the graph lacks stops the service, naming both.

/** Where each value of a job goes: "nodeId.inputName". */
export interface ComfyInputs {
  prompt: string;
  negativePrompt?: string;
  width?: string;
  height?: string;
  seed?: string;
  batchSize?: string;
}

/** ComfyUI's stock text-to-image graph: 3 KSampler, 5 EmptyLatentImage, 6/7 CLIPTextEncode, 9 SaveImage. */
export const DEFAULT_INPUTS: Required<ComfyInputs> = {
  prompt: "6.text",
  negativePrompt: "7.text",
  width: "5.width",
  height: "5.height",
  seed: "3.seed",
  batchSize: "5.batch_size",
};
export const DEFAULT_OUTPUT = "9";

export interface ComfyNode {
  class_type: string;
  inputs: Record<string, unknown>;
  _meta?: { title?: string };
}
export type ComfyGraph = Record<string, ComfyNode>;

/** One graph with where its values go and which node's images are the answer. */
export interface ComfyJobGraph {
  graph: ComfyGraph;
  inputs: ComfyInputs;
  output: string;
}

/** A channel's workflows, resolved at start. */
export interface ComfyChannel extends ComfyJobGraph {
  /** Edits: the graph (the channel's own unless the edit names one) and its LoadImage inputs. */
  edit?: ComfyJobGraph & { image: string; mask?: string };
}

const INPUT_REF = /^[^.\s]+\.[^.\s]+$/;
const ref = z.string().regex(INPUT_REF, 'must be "nodeId.inputName", for example "6.text"');
/** A mapping overrides the defaults key by key; null drops a key the graph has no place for. */
const inputsSchema = z
  .object({
    prompt: ref.optional(),
    negativePrompt: ref.nullable().optional(),
    width: ref.nullable().optional(),
    height: ref.nullable().optional(),
    seed: ref.nullable().optional(),
    batchSize: ref.nullable().optional(),
  })
  .strict();
const nodeId = z.string().min(1).max(64);

/** The models file's fields of a comfyui channel (catalog.ts adds them to every channel and refuses them elsewhere). */
export const comfyChannelFields = {
  /** The workflow in ComfyUI's API format, a path relative to the models file. */
  workflow: z.string().min(1).optional(),
  inputs: inputsSchema.optional(),
  /** The node whose images are the answer (a SaveImage). */
  output: nodeId.optional(),
  /** Edits: LoadImage inputs for the image and mask, in the channel's workflow or one of its own. */
  edit: z
    .object({ workflow: z.string().min(1).optional(), image: ref, mask: ref.optional(), inputs: inputsSchema.optional(), output: nodeId.optional() })
    .strict()
    .optional(),
};
export const COMFY_ONLY_FIELDS = Object.keys(comfyChannelFields) as (keyof typeof comfyChannelFields)[];

type InputsFile = z.infer<typeof inputsSchema>;
export interface ComfyChannelFile {
  workflow?: string;
  inputs?: InputsFile;
  output?: string;
  edit?: { workflow?: string; image: string; mask?: string; inputs?: InputsFile; output?: string };
}

/** Reads and checks a channel's workflows; throws one message naming every problem. */
export function resolveComfyChannel(file: ComfyChannelFile, modelsDir: string): ComfyChannel {
  if (!file.workflow) throw new Error("workflow is required (a ComfyUI workflow in API format, relative to the models file)");
  const graph = readWorkflow(file.workflow, modelsDir);
  const inputs = mergeInputs(DEFAULT_INPUTS, file.inputs);
  const output = file.output ?? DEFAULT_OUTPUT;
  const problems = checkJobGraph(file.workflow, graph, inputs, output);
  let edit: ComfyChannel["edit"];
  if (file.edit) {
    const editFile = file.edit.workflow ?? file.workflow;
    const editGraph = file.edit.workflow ? readWorkflow(file.edit.workflow, modelsDir) : graph;
    const editInputs = mergeInputs(inputs, file.edit.inputs);
    const editOutput = file.edit.output ?? output;
    problems.push(...checkJobGraph(editFile, editGraph, editInputs, editOutput));
    for (const [what, target] of [["edit.image", file.edit.image], ["edit.mask", file.edit.mask]] as const) {
      if (target) problems.push(...checkInput(editFile, editGraph, what, target));
    }
    edit = { graph: editGraph, inputs: editInputs, output: editOutput, image: file.edit.image, mask: file.edit.mask };
  }
  if (problems.length > 0) throw new Error(problems.join("; "));
  return { graph, inputs, output, edit };
}

function mergeInputs(base: ComfyInputs, given: InputsFile | undefined): ComfyInputs {
  const merged: Record<string, string | undefined> = { ...base };
  for (const [key, value] of Object.entries(given ?? {})) merged[key] = value ?? undefined;
  return merged as unknown as ComfyInputs;
}

function readWorkflow(path: string, modelsDir: string): ComfyGraph {
  const full = resolve(modelsDir, path);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(full, "utf8"));
  } catch (error) {
    throw new Error(`workflow ${path}: ${(error as Error).message}`);
  }
  const problem = apiFormatProblem(raw);
  if (problem) throw new Error(`workflow ${path}: ${problem}`);
  return raw as ComfyGraph;
}

/** Why a parsed file is not a graph in ComfyUI's API format, or undefined when it is one. */
export function apiFormatProblem(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return "not a JSON object";
  const record = raw as Record<string, unknown>;
  if (Array.isArray(record.nodes) && "links" in record) return "this is ComfyUI's UI format; export the workflow with \"Export (API)\"";
  const ids = Object.keys(record);
  if (ids.length === 0) return "the workflow has no nodes";
  for (const id of ids) {
    const node = record[id] as Partial<ComfyNode> | null;
    const isNode = node !== null && typeof node === "object" && typeof node.class_type === "string" && node.inputs !== null && typeof node.inputs === "object";
    if (!isNode) return `node ${id} is not an API-format node ({"class_type", "inputs"})`;
  }
  return undefined;
}

function checkJobGraph(file: string, graph: ComfyGraph, inputs: ComfyInputs, output: string): string[] {
  const problems = Object.entries(inputs).flatMap(([key, target]) => (target ? checkInput(file, graph, `inputs.${key}`, target) : []));
  if (!graph[output]) problems.push(`output: workflow ${file} has no node ${output}`);
  return problems;
}

function checkInput(file: string, graph: ComfyGraph, what: string, target: string): string[] {
  const [id, input] = splitRef(target);
  const node = graph[id];
  if (!node) return [`${what}: workflow ${file} has no node ${id}`];
  if (!(input in node.inputs)) return [`${what}: node ${id} (${node.class_type}) of workflow ${file} has no input "${input}"`];
  if (Array.isArray(node.inputs[input])) return [`${what}: input "${input}" of node ${id} (${node.class_type}) is a link to another node, not a value`];
  return [];
}

export function splitRef(target: string): [string, string] {
  const cut = target.indexOf(".");
  return [target.slice(0, cut), target.slice(cut + 1)];
}
