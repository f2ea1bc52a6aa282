// The instants Orvado accepts from clients (console filters, cursors, CLI flags):
// years 0001 to 9999, ISO 8601's four-digit years. JavaScript's Date reaches
// ±275,760 years and PostgreSQL's timestamptz 4713 BC to 294,276 AD, so a time
// such as -271821-04-20 parses in one and fails in the other; inside this range
// both agree.

export const EARLIEST_TIMESTAMP_MS = Date.parse("0001-01-01T00:00:00.000Z");
export const LATEST_TIMESTAMP_MS = Date.parse("9999-12-31T23:59:59.999Z");

export const TIMESTAMP_RANGE_TEXT = "between the years 0001 and 9999";

export function isSupportedTimestamp(ms: number): boolean {
  return Number.isFinite(ms) && ms >= EARLIEST_TIMESTAMP_MS && ms <= LATEST_TIMESTAMP_MS;
}

/** Date.parse, limited to the supported range: null for text that is no time, or a time outside it. */
export function parseSupportedTimestamp(text: string): number | null {
  const ms = Date.parse(text);
  return isSupportedTimestamp(ms) ? ms : null;
}
