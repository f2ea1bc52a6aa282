import type { UsageRow } from "./format.ts";

// RFC 4180 text for the usage export. Key names and end-user ids are typed by users, so a cell that
// a spreadsheet would run as a formula (= + - @ at the start) gets a leading quote.

export const USAGE_COLUMNS = [
  "requestId",
  "createdAt",
  "settledAt",
  "model",
  "size",
  "tier",
  "status",
  "imagesRequested",
  "imagesDelivered",
  "amountUsd",
  "amountMicros",
  "keyId",
  "keyName",
  "user",
] as const satisfies ReadonlyArray<keyof UsageRow>;

function cell(value: unknown): string {
  let text = value === null || value === undefined ? "" : String(value);
  if (/^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(values: unknown[]): string {
  return `${values.map(cell).join(",")}\r\n`;
}

export const csvRow = (row: UsageRow) => csvLine(USAGE_COLUMNS.map((column) => row[column]));
