// What the fuzz test (fuzz.test.ts) is made of: a seeded generator, the shape of
// a case, and the hostile values every field is tried with (docs/reliability.md).

// ---- a small seeded generator (mulberry32) ----

export class Random {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** Text from a mix of alphabets: ASCII, control characters, accents, CJK, RTL marks, emoji, lone surrogates. */
  text(maxLength: number): string {
    const pools = ["abcxyz ABC019-_.", "\u0000\u0001\u0007\b\t\n\r\u001b\u007f", "éßøñüç", "漢字かなカナ한글", "\u200b\u200e\u202e\ufeff", "😀🎨🔥👩‍🎨", "\ud800\udfff"];
    let text = "";
    const length = this.int(maxLength + 1);
    for (let index = 0; index < length; index += 1) text += this.pick([...this.pick(pools)]);
    return text;
  }
}


export interface HttpCase {
  kind: "http";
  label: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface RawCase {
  kind: "raw";
  label: string;
  bytes: string;
}

export type FuzzCase = HttpCase | RawCase;

// ---- hostile values ----

/** Names of Object.prototype's members, which an object-literal table would "find". */
const PROTOTYPE_NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__defineGetter__"];

/** A prototype name in a random case ("constructor", "CONSTRUCTOR", "cOnStRuCtOr"). */
export function prototypeName(random: Random): string {
  const name = random.pick(PROTOTYPE_NAMES);
  const casing = random.int(3);
  if (casing === 0) return name;
  if (casing === 1) return name.toUpperCase();
  return [...name].map((char) => (random.chance(0.5) ? char.toUpperCase() : char.toLowerCase())).join("");
}

/** Edges of integer fields: past int32, uint32 and the safe integers, fractions, and strings that look like numbers. */
export const INTEGER_EDGES: readonly unknown[] = [
  0, -1, -0.5, 0.5, 1.5, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1, 2 ** 53, 2 ** 64, 1e300, -1e300, -(2 ** 31),
  Number.MIN_VALUE, "NaN", "Infinity", "-Infinity", "1e3", "0x10", "1", " 1", "",
];

/** The same edges as they arrive in a query string, plus spellings that are not plain digits. */
export const QUERY_NUMBER_EDGES: readonly string[] = [
  "0", "-1", "2147483648", "4294967296", "9007199254740991", "9007199254740993", "1e300", "1e1", "0x10", "+5", "05", "5.0", "5.", " 5",
  "NaN", "Infinity", "", "9".repeat(400), "1_000", "٣",
];

/** Text with an unpaired UTF-16 surrogate somewhere in it. */
export function illFormedText(random: Random): string {
  const lone = random.pick(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"]);
  const around = random.pick(["", "a", "a fox ", "漢字", "🎨"]);
  return random.pick([`${around}${lone}`, `${lone}${around}`, `${around}${lone}${around}`]);
}

/** Times JavaScript reads and PostgreSQL cannot hold (or that no calendar has), for console filters and cursors. */
export const OUT_OF_RANGE_TIMES: readonly string[] = [
  "-271821-04-20T00:00:00Z", "+275760-09-13T00:00:00Z", "275760-09-13", "-000001-01-01T00:00:00Z", "+010000-01-01T00:00:00Z",
  "10000-01-01", "0000-00-00", "2026-13-45", "2026-02-30T25:61:61Z", "1e300", "9".repeat(40), "NaN", "Infinity",
];
