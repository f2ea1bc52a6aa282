// How money, times and sizes read on screen. Money arrives as USD decimal strings ("4.960000").

/** "$4.96", "$10.00", "$0.0125": cents always, sub-cent digits only when there are any. */
export function usd(text) {
  if (text === null || text === undefined || text === "") return "—";
  const value = Number(text);
  if (!Number.isFinite(value)) return String(text);
  return (value < 0 ? "−$" : "$") + Math.abs(value).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 6 });
}

/** A credit as "+$5.00", a debit as "−$0.04" (the minus sign, as usd() writes it); zero unsigned. */
export function signedUsd(text, sign) {
  const shown = usd(text);
  const value = Number(text);
  if (!Number.isFinite(value) || value === 0) return shown;
  if (value < 0) return shown;
  return (sign < 0 ? "−" : "+") + shown;
}

/** Integer micro-USD (number or bigint) as the API's decimal string, exactly: 40000 -> "0.040000". */
export function microsText(micros) {
  const value = BigInt(micros);
  const abs = value < 0n ? -value : value;
  return `${value < 0n ? "-" : ""}${abs / 1000000n}.${String(abs % 1000000n).padStart(6, "0")}`;
}

/** A non-negative USD decimal string as integer micro-USD: "0.04" -> 40000n. Money is never a float here. */
export function textMicros(text) {
  const [whole, fraction = ""] = String(text).split(".");
  return BigInt(whole || "0") * 1000000n + BigInt((fraction + "000000").slice(0, 6));
}

export function dateTime(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return date.toLocaleString("en-US", { month: "short", day: "numeric", year: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

export function shortDate(iso) {
  if (!iso) return "—";
  return new Date(iso).toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric" });
}

/** "2026-11-01" (a UTC calendar day) -> "Nov 1" */
export function dayLabel(day) {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, date)).toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
}

export function relative(iso) {
  if (!iso) return "never";
  const seconds = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return shortDate(iso);
}

export const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** The size tier of a request size (docs/api.md#sizes-and-tiers): by the longest side; 1k/2k/4k name the tier; auto is 1K. */
export function tierOf(size) {
  const text = String(size || "1024x1024").trim().toLowerCase();
  if (text === "auto") return "1K";
  if (/^[124]k$/.test(text)) return text.toUpperCase();
  const match = /^(\d+)x(\d+)$/.exec(text);
  if (!match) return null;
  const longest = Math.max(Number(match[1]), Number(match[2]));
  if (longest < 1800) return "1K";
  if (longest < 3000) return "2K";
  return "4K";
}

/** A share from 0 to 1 as "66.7%". */
export const percent = (share) => `${(share * 100).toLocaleString("en-US", { maximumFractionDigits: 1 })}%`;

/** Milliseconds as "850 ms", "12.4 s" or "3 min 5 s"; "—" for none. */
export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 })} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Bytes as "512 B", "1.4 MB". */
export function bytes(count) {
  if (count < 1024) return `${count} B`;
  if (count < 1024 * 1024) return `${(count / 1024).toFixed(1)} KB`;
  return `${(count / 1024 / 1024).toFixed(1)} MB`;
}
