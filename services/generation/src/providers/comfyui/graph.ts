import { splitRef, type ComfyGraph, type ComfyInputs } from "./workflow.ts";

// The channel's workflow with one job's values set into the mapped inputs. The
// workflow read at start is shared by every job, so each job sets its values in a copy.

export interface JobValues {
  prompt: string;
  width: number;
  height: number;
  seed: number;
  batchSize: number;
  /** Edits: the names ComfyUI gave the uploaded image and mask (POST /upload/image). */
  image?: string;
  mask?: string;
}

export function jobGraph(graph: ComfyGraph, inputs: ComfyInputs, values: JobValues, edit?: { image: string; mask?: string }): ComfyGraph {
  const copy = structuredClone(graph);
  const set = (target: string | undefined, value: string | number | undefined) => {
    if (!target || value === undefined) return;
    const [id, input] = splitRef(target);
    copy[id]!.inputs[input] = value;
  };
  set(inputs.prompt, values.prompt);
  set(inputs.width, values.width);
  set(inputs.height, values.height);
  set(inputs.seed, values.seed);
  set(inputs.batchSize, values.batchSize);
  set(edit?.image, values.image);
  set(edit?.mask, values.mask);
  return copy;
}

/** "node 3 (KSampler)", as the operator's detail names a node. */
export function nodeName(graph: ComfyGraph, id: unknown, type?: unknown): string {
  const node = typeof id === "string" ? graph[id] : undefined;
  const kind = typeof type === "string" && type ? type : node?.class_type;
  // A server's node id is a string (a number on old servers); anything else is not quoted (an object's String() may throw).
  return `node ${typeof id === "string" || typeof id === "number" ? id : "?"}${kind ? ` (${kind})` : ""}`;
}
