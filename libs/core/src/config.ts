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
