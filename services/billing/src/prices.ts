import { readFileSync } from "node:fs";
import { z } from "zod";
import { TIER_NAMES, usdToMicros, type TierName } from "@orvado/core";
import type { Db, Queryable } from "@orvado/db";

export interface PriceEntry {
  model: string;
  tier: TierName;
  priceMicros: bigint;
}

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

/** Makes the table equal to the file; prices apply to reservations made after this. */
export async function syncPrices(db: Db, prices: PriceEntry[]): Promise<void> {
  await db.tx(async (q) => {
    await q.query("DELETE FROM billing.prices");
    for (const price of prices) {
      await q.query("INSERT INTO billing.prices (model, tier, price_micros) VALUES ($1, $2, $3)", [
        price.model,
        price.tier,
        price.priceMicros,
      ]);
    }
  });
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
