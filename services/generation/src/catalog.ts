import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { TIER_NAMES, tierFromName } from "@orvado/core";
import type { Tier } from "@orvado/proto";
import { isGeminiModel } from "./providers/google/size.ts";
import { COMFY_ONLY_FIELDS, comfyChannelFields, resolveComfyChannel, type ComfyChannel } from "./providers/comfyui/workflow.ts";
import { nameClashes } from "./aliases.ts";

// The model catalog: public model ids (docs/api.md#models-and-families), their family, the tiers they offer and
// the channels that serve them, from the operator's models file (docs/providers.md).
// A channel names the environment variable holding its key, never the key itself.

export const UPSTREAM_PROVIDERS = ["sandbox", "openai", "google", "bytedance", "black-forest-labs", "fal", "replicate", "openai-compatible", "automatic1111", "comfyui"] as const;
export type UpstreamProvider = (typeof UPSTREAM_PROVIDERS)[number];

/** The automatic1111 channel's own settings (providers/automatic1111/): sampling steps, sampler and negative prompt. */
const AUTOMATIC1111_FIELDS = {
  steps: z.number().int().min(1).max(150).optional(),
  sampler: z.string().min(1).max(64).optional(),
  negativePrompt: z.string().max(4000).optional(),
};
const AUTOMATIC1111_ONLY = Object.keys(AUTOMATIC1111_FIELDS) as (keyof typeof AUTOMATIC1111_FIELDS)[];
/** Providers whose channel names its own server and needs neither an upstream model nor a key. */
const SELF_HOSTED: ReadonlySet<UpstreamProvider> = new Set(["automatic1111", "comfyui"]);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The longest a channel's timeoutMs may be: the job's own limit (GENERATION_JOB_TIMEOUT_MS) goes no higher. */
export const MAX_CHANNEL_TIMEOUT_MS = 600_000;

const channelSchema = z
  .object({
    name: z.string().min(1).max(64).regex(/^[\w.-]+$/, "letters, digits, '_', '-' and '.' only"),
    provider: z.enum(UPSTREAM_PROVIDERS),
    /** The upstream's own model id (gpt-image-1, gemini-2.5-flash-image, flux-pro-1.1, …). */
    upstreamModel: z.string().min(1).optional(),
    /** Overrides the provider's default API address; required for openai-compatible. */
    baseUrl: z.string().url().optional(),
    /** Name of the environment variable that holds this channel's API key. */
    apiKeyEnv: z.string().regex(ENV_NAME, "must be an environment variable name").optional(),
    /** Lower is tried first; equal priorities keep file order. */
    priority: z.number().int().min(0).max(1_000_000).optional(),
    /** Jobs this channel runs at once. */
    capacity: z.number().int().min(1).max(100_000),
    /** Tiers this channel serves (default: every tier of the model). */
    tiers: z.array(z.enum(TIER_NAMES)).min(1).optional(),
    /** Images per upstream call (default: what the provider package says for the model). */
    maxImagesPerCall: z.number().int().min(1).max(10).optional(),
    /** Gives up on this channel (and fails over) after this long; the job's own limit still applies. */
    timeoutMs: z.number().int().min(100).max(MAX_CHANNEL_TIMEOUT_MS).optional(),
    /** How often polled providers (Black Forest Labs, Replicate) are polled. */
    pollIntervalMs: z.number().int().min(10).max(60_000).optional(),
    /** Lets URLs from this upstream point at loopback/private addresses (local servers, tests). */
    allowPrivateNetwork: z.boolean().optional(),
    ...AUTOMATIC1111_FIELDS,
    /** comfyui only: the workflow file and where the job's values go (providers/comfyui/workflow.ts). */
    ...comfyChannelFields,
  })
  .strict();

const modelSchema = z
  .object({
    id: z.string().min(1),
    /** Other names requests may give this model (an OpenAI client's "gpt-image-1"); they run it, and everything is recorded under `id`. */
    aliases: z.array(z.string().min(1).max(200)).max(50).optional(),
    family: z.enum(["alpha", "beta"]),
    tiers: z.array(z.enum(TIER_NAMES)).min(1),
    /** Takes image edits (POST /v1/images/edits) on the channels that can edit (providers/edit-support.ts). */
    edits: z.boolean().optional(),
    channels: z.array(channelSchema).min(1),
  })
  .strict()
  .superRefine((model, ctx) => {
    const names = new Set<string>();
    model.channels.forEach((channel, index) => {
      const issue = (message: string) => ctx.addIssue({ code: "custom", path: ["channels", index], message: `channel "${channel.name}": ${message}` });
      if (names.has(channel.name)) issue("the name is used twice in this model");
      names.add(channel.name);
      if (channel.provider !== "automatic1111") for (const field of AUTOMATIC1111_ONLY) if (channel[field] !== undefined) issue(`${field} is an automatic1111 setting`);
      for (const field of COMFY_ONLY_FIELDS) if (channel[field] !== undefined && channel.provider !== "comfyui") issue(`${field} is for comfyui channels only`);
      if (channel.provider === "sandbox") return;
      const selfHosted = SELF_HOSTED.has(channel.provider);
      if (!channel.upstreamModel && !selfHosted) issue("upstreamModel is required for an upstream provider");
      if (!channel.apiKeyEnv && channel.provider !== "openai-compatible" && !selfHosted) issue("apiKeyEnv is required (the environment variable holding the key)");
      if ((channel.provider === "openai-compatible" || selfHosted) && !channel.baseUrl) issue(`baseUrl is required for ${channel.provider}`);
      // A ComfyUI server of one's own: its model is in the workflow.
      if (channel.provider === "comfyui" && !channel.workflow) issue("workflow is required for comfyui (a workflow in ComfyUI's API format, relative to the models file)");
      // Google shut its Imagen API down; @ai-sdk/google (4) serves Gemini image models only.
      if (channel.provider === "google" && channel.upstreamModel && !isGeminiModel(channel.upstreamModel)) issue("Google serves Gemini image models only (gemini-…): its Imagen API was shut down");
      for (const tier of channel.tiers ?? []) if (!model.tiers.includes(tier)) issue(`tier ${tier} is not one of the model's tiers`);
    });
  });

const catalogFileSchema = z.object({ _note: z.string().optional(), models: z.array(modelSchema).min(1) }).strict();

type ChannelFile = z.infer<typeof channelSchema>;

export interface ChannelConfig extends Omit<ChannelFile, "tiers" | "priority"> {
  priority: number;
  /** Tiers served by this channel. */
  tiers: Tier[];
  /** comfyui: the workflows read and checked at start. */
  comfyui?: ComfyChannel;
}

export interface CatalogModel {
  id: string;
  /** Other names that run this model (aliases.ts); never recorded anywhere. */
  aliases: string[];
  family: "alpha" | "beta";
  tiers: Tier[];
  /** Takes image edits; only its channels that can edit run them. */
  edits: boolean;
  /** In the order they are tried: by priority, then file order. */
  channels: ChannelConfig[];
}

export type Catalog = Map<string, CatalogModel>;

export function loadCatalog(path: string): Catalog {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`models file ${path}: ${(error as Error).message}`);
  }
  return parseCatalog(raw, path, dirname(path));
}

/** `modelsDir` is where paths in the file (comfyui workflows) are read from. */
export function parseCatalog(raw: unknown, source = "models file", modelsDir = process.cwd()): Catalog {
  const parsed = catalogFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`${source}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  const clashes = nameClashes(parsed.data.models);
  if (clashes.length > 0) throw new Error(`${source}: ${clashes.join("; ")}`);
  return new Map(
    parsed.data.models.map((model) => {
      const tiers = model.tiers.map((name) => tierFromName(name)!);
      const channels = model.channels
        .map((channel, index) => ({
          ...channel,
          ...(channel.provider === "comfyui" && { comfyui: comfyChannel(channel, model.id, source, modelsDir) }),
          priority: channel.priority ?? index,
          tiers: channel.tiers ? channel.tiers.map((name) => tierFromName(name)!) : tiers,
          order: index,
        }))
        .sort((a, b) => a.priority - b.priority || a.order - b.order)
        .map(({ order: _order, ...channel }) => channel);
      return [model.id, { id: model.id, aliases: model.aliases ?? [], family: model.family, tiers, edits: model.edits ?? false, channels }];
    }),
  );
}

function comfyChannel(channel: ChannelFile, modelId: string, source: string, modelsDir: string): ComfyChannel {
  try {
    return resolveComfyChannel(channel, modelsDir);
  } catch (error) {
    throw new Error(`${source}: channel "${channel.name}" of model "${modelId}": ${(error as Error).message}`);
  }
}

/**
 * Reads each channel's API key from the environment variable it names. A missing one
 * stops the service at start, naming the channel and the variable (never the value).
 */
export function resolveChannelKeys(catalog: Catalog, readKey: (variable: string) => string | undefined): Map<string, string | undefined> {
  const keys = new Map<string, string | undefined>();
  const missing: string[] = [];
  for (const model of catalog.values()) {
    for (const channel of model.channels) {
      if (!channel.apiKeyEnv) continue;
      const value = readKey(channel.apiKeyEnv)?.trim();
      if (!value) missing.push(`channel "${channel.name}" of model "${model.id}" needs its API key in the environment variable ${channel.apiKeyEnv}, which is not set`);
      keys.set(channelKey(model.id, channel.name), value);
    }
  }
  if (missing.length > 0) throw new Error(`models file: ${missing.join("; ")}`);
  return keys;
}

/** One name per model and channel: capacity, breakers and keys are counted on it. */
export const channelKey = (modelId: string, channel: string) => `${modelId}/${channel}`;

/** The sandbox renders for every model in the embedded default; /v1/models says so. */
export const isSandboxOnly = (model: CatalogModel) => model.channels.every((channel) => channel.provider === "sandbox");
