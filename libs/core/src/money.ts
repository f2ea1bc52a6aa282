// Money is integer micro-USD (1e-6 USD) as bigint everywhere; these are the only
// conversions to and from the decimal text people type and read.

export const MICROS_PER_USD = 1_000_000n;

const USD_PATTERN = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

/** Parses a non-negative decimal USD amount ("12.5", "0.040000") exactly; null if malformed. */
export function usdToMicros(text: string): bigint | null {
  const match = USD_PATTERN.exec(text.trim());
  if (!match) return null;
  const whole = BigInt(match[1]!);
  const fraction = BigInt((match[2] ?? "").padEnd(6, "0"));
  return whole * MICROS_PER_USD + fraction;
}

/** Formats micro-USD as a decimal string with 6 places ("-0.040000"). */
export function microsToUsd(micros: bigint): string {
  const sign = micros < 0n ? "-" : "";
  const abs = micros < 0n ? -micros : micros;
  const whole = abs / MICROS_PER_USD;
  const fraction = (abs % MICROS_PER_USD).toString().padStart(6, "0");
  return `${sign}${whole}.${fraction}`;
}
