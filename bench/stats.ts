// Small statistics helpers shared by the benchmarks.

/** The p-th percentile (0–100) of an ascending array, nearest-rank; 0 when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** The median (nearest-rank p50) of values in any order; 0 when empty. */
export function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

/** A plain text table: the first row is the header; numbers are right-aligned. */
export function formatTable(rows: (string | number)[][]): string {
  const text = rows.map((row) => row.map((cell) => String(cell)));
  const widths = text[0]!.map((_, column) => Math.max(...text.map((row) => row[column]?.length ?? 0)));
  const line = (row: string[]) =>
    row.map((cell, column) => (/^[\d.,x×%-]+$/.test(cell) && column > 0 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join("  ");
  return [line(text[0]!), widths.map((width) => "-".repeat(width)).join("  "), ...text.slice(1).map(line)].join("\n");
}

export const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a");

export const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** Seconds since start, for progress lines. */
export const since = (start: number) => `${((Date.now() - start) / 1000).toFixed(1)}s`;
