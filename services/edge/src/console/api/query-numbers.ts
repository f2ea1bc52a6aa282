import { z } from "zod";

// Whole numbers in console query strings are written one way only: decimal digits,
// no sign, no leading zero, no exponent, no spaces, no hex ("1e300", " 5", "0x10",
// "05" and "5.0" are refused, not read as some number). The digit count keeps
// Number() exact before the range is checked.
const CANONICAL_INTEGER = /^(0|[1-9][0-9]{0,14})$/;

/** A query parameter holding a whole number from min to max. */
export function queryInteger(min: number, max: number) {
  return z
    .string()
    .regex(CANONICAL_INTEGER, `must be a whole number from ${min} to ${max}, written in plain digits`)
    .transform(Number)
    .pipe(z.number().min(min, `must be from ${min} to ${max}`).max(max, `must be from ${min} to ${max}`));
}
