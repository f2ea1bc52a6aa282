import { z } from "zod";
import { parsePlainInteger } from "../../plain-integer.ts";

/** A query parameter holding a whole number from min to max, in plain digits (plain-integer.ts). */
export function queryInteger(min: number, max: number) {
  const message = `must be a whole number from ${min} to ${max}, written in plain digits`;
  return z
    .string()
    .transform((text, context) => {
      const value = parsePlainInteger(text);
      if (value === null || value < min || value > max) {
        context.addIssue({ code: "custom", message });
        return z.NEVER;
      }
      return value;
    });
}
