import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadCatalog, parseCatalog } from "../../catalog.ts";
import { DEFAULT_INPUTS } from "./workflow.ts";

// A comfyui channel's workflow and mapping as the models file is read at start
// (catalog.ts loadCatalog, from files on disk): a bad one stops the service, naming
// the channel, the workflow and what is missing.

const STOCK = fileURLToPath(new URL("../../../../../config/comfyui/text-to-image.json", import.meta.url));
const INPAINT = fileURLToPath(new URL("../../../../../config/comfyui/inpaint.json", import.meta.url));
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "orvado-comfyui-"));
  writeFileSync(join(dir, "t2i.json"), readFileSync(STOCK));
  writeFileSync(join(dir, "ui.json"), JSON.stringify({ nodes: [{ id: 3, type: "KSampler" }], links: [] }));
  writeFileSync(join(dir, "broken.json"), "{ not json");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(channel: Record<string, unknown>) {
  const path = join(dir, "models.json");
  const base = { name: "gpu", provider: "comfyui", baseUrl: "http://10.0.0.5:8188", workflow: "t2i.json", capacity: 1 };
  writeFileSync(path, JSON.stringify({ models: [{ id: "local", family: "beta", tiers: ["1K"], channels: [{ ...base, ...channel }] }] }));
  return () => loadCatalog(path);
}

describe("comfyui channels in the models file (read from disk at start)", () => {
  it("takes the stock workflow with the default mapping, the path read relative to the models file", () => {
    const gpu = load({})().get("local")!.channels[0]!;
    expect(gpu.comfyui!.inputs).toEqual(DEFAULT_INPUTS);
    expect(gpu.comfyui!.output).toBe("9");
    expect(gpu.comfyui!.graph["3"]!.class_type).toBe("KSampler");
    expect(gpu.comfyui!.edit).toBeUndefined();
  });

  it("overrides the mapping key by key, and null drops an input the graph has no place for", () => {
    const gpu = load({ inputs: { prompt: "7.text", negativePrompt: null } })().get("local")!.channels[0]!;
    expect(gpu.comfyui!.inputs).toMatchObject({ prompt: "7.text", negativePrompt: undefined, seed: "3.seed" });
  });

  it("refuses a missing, unreadable or UI-format workflow", () => {
    expect(load({ workflow: "nope.json" })).toThrow(/channel "gpu" of model "local": workflow nope.json: ENOENT/);
    expect(load({ workflow: "broken.json" })).toThrow(/workflow broken.json: .*JSON/);
    expect(load({ workflow: "ui.json" })).toThrow(/workflow ui.json: this is ComfyUI's UI format; export the workflow with "Export \(API\)"/);
  });

  it("refuses a mapping to a node or input the workflow lacks, or to a link", () => {
    expect(load({ inputs: { seed: "30.seed" } })).toThrow(/inputs.seed: workflow t2i.json has no node 30/);
    expect(load({ inputs: { width: "5.w" } })).toThrow(/inputs.width: node 5 \(EmptyLatentImage\) of workflow t2i.json has no input "w"/);
    expect(load({ inputs: { prompt: "3.model" } })).toThrow(/inputs.prompt: input "model" of node 3 \(KSampler\) is a link to another node, not a value/);
    expect(load({ output: "99" })).toThrow(/output: workflow t2i.json has no node 99/);
    expect(load({ inputs: { prompt: "six" } })).toThrow(/must be "nodeId.inputName"/);
  });

  it("checks an edit's LoadImage mapping against its workflow", () => {
    expect(load({ edit: { image: "10.image" } })).toThrow(/edit.image: workflow t2i.json has no node 10/);
    const ok = load({ edit: { workflow: INPAINT, image: "10.image", mask: "11.image", inputs: { width: null, height: null, batchSize: null } } })();
    expect(ok.get("local")!.channels[0]!.comfyui!.edit).toMatchObject({ image: "10.image", mask: "11.image", output: "9" });
    expect(load({ edit: { workflow: STOCK, image: "10.image", mask: "12.image" } })).toThrow(/edit.image: workflow .*text-to-image.json has no node 10; edit.mask: .* has no node 12/);
  });

  it("requires baseUrl and workflow, and keeps comfyui fields off other providers", () => {
    const models = (channel: Record<string, unknown>) => ({ models: [{ id: "m", family: "beta", tiers: ["1K"], channels: [{ name: "c", capacity: 1, ...channel }] }] });
    expect(() => parseCatalog(models({ provider: "comfyui" }))).toThrow(/baseUrl is required for comfyui.*workflow is required for comfyui/);
    expect(() => parseCatalog(models({ provider: "sandbox", workflow: "x.json" }))).toThrow(/workflow is for comfyui channels only/);
  });
});
