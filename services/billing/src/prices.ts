import { readFileSync } from "node:fs";
import { z } from "zod";
import { TIER_NAMES, usdToMicros, type TierName } from "@orvado/core";
import type { Db, Queryable } from "@orvado/db";

// The price table: model x tier, flat USD per image (docs/api.md#sizes-and-tiers). The operator's
// file seeds prices the table does not have yet; after that prices change only
// through setPrice (CLI, admin console), which records every change. A change
// applies to reservations made after it: a hold keeps the unit price it took.

export interface PriceEntry {
  model: string;
  tier: TierName;
  priceMicros: bigint;
}

export interface PriceChange {
  changeId: bigint;
  model: string;
  tier: TierName;
  oldPriceMicros: bigint | null;
  newPriceMicros: bigint;
  actor: string;
  note: string;
  changedAt: Date;
}

/** A price above this is surely a typo (an extra zero or two), not a price. */
export const MAX_PRICE_MICROS = 1_000n * 1_000_000n;

const usdText = z.string().refine((text) => usdToMicros(text) !== null, "must be a USD amount like \"0.040000\"");
const priceFileSchema = z.object({
  prices: z.record(z.string().min(1), z.partialRecord(z.enum(TIER_NAMES), usdText)),
});

/** Reads the operator's price file: model -> tier -> USD per image. */
export function loadPriceFile(path: string): PriceEntry[] {
  const parsed = priceFileSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`price file ${path}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return Object.entries(parsed.data.prices).flatMap(([model, tiers]) =>
    Object.entries(tiers).map(([tier, usd]) => ({ model, tier: tier as TierName, priceMicros: usdToMicros(usd!)! })),
  );
}

/** Adds the file's prices the table lacks, each recorded as a change by "prices file"; existing prices are kept. */
export async function seedPrices(db: Db, prices: PriceEntry[], fileName: string): Promise<number> {
  let added = 0;
  for (const price of prices) {
    await db.tx(async (q) => {
      const inserted = await q.query(
        "INSERT INTO billing.prices (model, tier, price_micros) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING model",
        [price.model, price.tier, price.priceMicros],
      );
      if (inserted.rowCount !== 1) return;
      added += 1;
      await recordChange(q, { ...price, oldPriceMicros: null, actor: "prices file", note: `seeded from ${fileName}` });
    });
  }
  return added;
}

/**
 * Why a price change is refused, or null when it may be made. Without `create`, only a
 * model and tier the table already prices can be changed, so a typo cannot create a price
 * nobody sells; `create` (the CLI's --create, the console's "new price") gives a model or
 * tier its first price, as generation's start asks for a tier of the catalog that has none
 * (services/generation/src/catalog-prices.ts). $0 needs `free`, so a slip cannot give a model away.
 */
export async function priceChangeRefusal(q: Queryable, change: PriceEntry & { free: boolean; create?: boolean }): Promise<string | null> {
  if (change.priceMicros === 0n && !change.free) return "A price of 0 makes the model free: confirm it with free (the CLI's --free)";
  if (change.priceMicros !== 0n && change.free) return "free is only for a price of 0";
  if (change.create) return null;
  const { rows } = await q.query<{ tier: string }>("SELECT tier FROM billing.prices WHERE model = $1 ORDER BY tier", [change.model]);
  if (rows.length === 0) {
    return `Unknown model ${JSON.stringify(change.model)}: it has no prices (give a new model its first price with create, the CLI's --create)`;
  }
  const tiers = rows.map((row) => row.tier);
  if (!tiers.includes(change.tier)) {
    return `Model ${change.model} has no ${change.tier} tier; its tiers are ${tiers.join(", ")} (give a new tier its first price with create, the CLI's --create)`;
  }
  return null;
}

/** Sets one price and records the change in the same transaction; setting the same price again records nothing. */
export async function setPrice(db: Db, change: PriceEntry & { actor: string; note: string }): Promise<PriceChange | null> {
  return db.tx(async (q) => {
    const current = await q.query<{ price_micros: bigint }>(
      "SELECT price_micros FROM billing.prices WHERE model = $1 AND tier = $2 FOR UPDATE",
      [change.model, change.tier],
    );
    const oldPriceMicros = current.rows[0]?.price_micros ?? null;
    if (oldPriceMicros === change.priceMicros) return null;
    await q.query(
      `INSERT INTO billing.prices (model, tier, price_micros) VALUES ($1, $2, $3)
       ON CONFLICT (model, tier) DO UPDATE SET price_micros = EXCLUDED.price_micros`,
      [change.model, change.tier, change.priceMicros],
    );
    return recordChange(q, { ...change, oldPriceMicros });
  });
}

interface ChangeRow {
  change_id: bigint;
  model: string;
  tier: TierName;
  old_price_micros: bigint | null;
  new_price_micros: bigint;
  actor: string;
  note: string;
  changed_at: Date;
}

const fromChangeRow = (row: ChangeRow): PriceChange => ({
  changeId: row.change_id,
  model: row.model,
  tier: row.tier,
  oldPriceMicros: row.old_price_micros,
  newPriceMicros: row.new_price_micros,
  actor: row.actor,
  note: row.note,
  changedAt: new Date(row.changed_at),
});

async function recordChange(
  q: Queryable,
  change: PriceEntry & { oldPriceMicros: bigint | null; actor: string; note: string },
): Promise<PriceChange> {
  const { rows } = await q.query<ChangeRow>(
    `INSERT INTO billing.price_changes (model, tier, old_price_micros, new_price_micros, actor, note)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [change.model, change.tier, change.oldPriceMicros, change.priceMicros, change.actor, change.note],
  );
  return fromChangeRow(rows[0]!);
}

/** Newest first. */
export async function listPriceChanges(q: Queryable, model: string | null, limit: number): Promise<PriceChange[]> {
  const { rows } = await q.query<ChangeRow>(
    `SELECT * FROM billing.price_changes WHERE ($1::text IS NULL OR model = $1) ORDER BY change_id DESC LIMIT $2`,
    [model, limit],
  );
  return rows.map(fromChangeRow);
}

export async function listPrices(q: Queryable): Promise<PriceEntry[]> {
  const result = await q.query<{ model: string; tier: TierName; price_micros: bigint }>(
    "SELECT model, tier, price_micros FROM billing.prices ORDER BY model, tier",
  );
  return result.rows.map((row) => ({ model: row.model, tier: row.tier, priceMicros: row.price_micros }));
}

export async function priceFor(q: Queryable, model: string, tier: TierName): Promise<bigint | null> {
  const result = await q.query<{ price_micros: bigint }>(
    "SELECT price_micros FROM billing.prices WHERE model = $1 AND tier = $2",
    [model, tier],
  );
  return result.rows[0]?.price_micros ?? null;
}
