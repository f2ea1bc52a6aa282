// Whole numbers in URLs (query parameters, link expiries) are read in one form
// only: decimal digits, no sign, no leading zero, no exponent, no fraction, no
// spaces, no hex. "+1", "01", "1e9", " 1", "1.0" and "0x1" are not read as some
// number; each is refused. Sixteen digits at most keeps Number() exact.

const PLAIN_INTEGER = /^(0|[1-9][0-9]{0,15})$/;

/** The number a query value spells in plain digits, or null (also for a repeated parameter, which arrives as an array). */
export function parsePlainInteger(text: unknown): number | null {
  if (typeof text !== "string" || !PLAIN_INTEGER.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}
