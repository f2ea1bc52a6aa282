import { z } from "zod";

// Each service's config module calls this once; nothing else reads process.env.
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`).join("\n");
  throw new Error(`Invalid configuration:\n${problems}`);
}

export const portSchema = z.coerce.number().int().min(0).max(65535);

/** "1", "true", "yes" -> true; anything else false. */
export const flagSchema = z
  .string()
  .optional()
  .transform((text) => text !== undefined && ["1", "true", "yes"].includes(text.toLowerCase()));

/** "a:9092, b:9092" -> ["a:9092", "b:9092"]; empty text -> []. */
export const commaListSchema = z
  .string()
  .default("")
  .transform((text) => text.split(",").map((item) => item.trim()).filter(Boolean));

/**
 * How a service's clients reach the other services (libs/rpc client.ts): "colocated"
 * calls a service running in the same process in-process, "http2" always goes over the
 * network. Tests set http2 to exercise the wire with the whole stack in one process.
 */
export const rpcTransportSchema = z.enum(["colocated", "http2"]).default("colocated");

const httpUrl = z.url({ protocol: /^https?$/ });

/**
 * A service's address: one URL, or its replicas' URLs separated by commas
 * ("http://10.0.0.5:7103,http://10.0.0.6:7103"); Orvado's RPC clients spread
 * calls across them (libs/rpc/src/replicas.ts).
 */
export function serviceUrlsSchema(defaultUrl: string) {
  return z
    .string()
    .default(defaultUrl)
    .transform((text, context) => {
      const urls = text.split(",").map((url) => url.trim()).filter(Boolean);
      if (urls.length === 0) context.addIssue({ code: "custom", message: "needs at least one http(s) URL" });
      urls.forEach((url, index) => {
        if (!httpUrl.safeParse(url).success) context.addIssue({ code: "custom", message: `entry ${index + 1} is not an http(s) URL` });
      });
      return urls;
    });
}

/**
 * A config type derived from its schema (z.output of the env schema's transform) with
 * the fields a caller may leave out, each of which the service defaults when unset:
 * tests and the embedded stack build configs without them.
 */
export type WithOptional<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;
