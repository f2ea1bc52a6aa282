import type { Queryable } from "@orvado/db";
import { spendKeyOf } from "@orvado/core";
import type { EntryKind } from "./ledger.ts";
import { emptyFold, foldEntry } from "./ledger-fold.ts";

// The balances, key_spend and cost_records tables are projections of the ledger.
// Replaying every entry in ledger order with ledger-fold.ts must give the same
// numbers; anything else means a projection drifted from the only record of money.

export interface RecomputedBalance {
  balanceMicros: bigint;
  heldMicros: bigint;
}

interface EntryRow {
  entry_id: bigint;
  kind: EntryKind;
  account_id: string;
  key_id: string | null;
  request_id: string;
  amount_micros: bigint;
}

export async function recomputeFromLedger(q: Queryable, accountId: string): Promise<RecomputedBalance> {
  const { rows } = await q.query<EntryRow>(
    "SELECT kind, request_id, amount_micros FROM billing.ledger WHERE account_id = $1 ORDER BY entry_id",
    [accountId],
  );
  const state = emptyFold();
  for (const entry of rows) foldEntry(state, entry);
  return { balanceMicros: state.balanceMicros, heldMicros: state.heldMicros };
}

export interface ReplayDifference {
  projection: "balance" | "key_spend" | "cost_record";
  id: string;
  field: string;
  live: bigint;
  replayed: bigint;
}

export interface ReplayReport {
  entriesRead: bigint;
  accountsChecked: number;
  keysChecked: number;
  requestsChecked: number;
  differences: ReplayDifference[];
}

type Totals = Record<string, bigint>;
const add = (map: Map<string, Totals>, id: string, field: string, delta: bigint) => {
  const totals = map.get(id) ?? {};
  totals[field] = (totals[field] ?? 0n) + delta;
  map.set(id, totals);
};

const BATCH = 10_000;

/** Rebuilds every projection from the ledger (read in entry order, in batches) and compares it with the live tables. */
export async function replayLedger(q: Queryable): Promise<ReplayReport> {
  const fold = emptyFold();
  const accounts = new Map<string, Totals>();
  const keys = new Map<string, Totals>();
  const requests = new Map<string, Totals>();
  let entriesRead = 0n;
  for (let after = 0n; ; ) {
    const { rows } = await q.query<EntryRow>(
      `SELECT entry_id, kind, account_id, key_id, request_id, amount_micros FROM billing.ledger
       WHERE entry_id > $1 ORDER BY entry_id LIMIT ${BATCH}`,
      [after],
    );
    for (const entry of rows) {
      const effect = foldEntry(fold, entry);
      add(accounts, entry.account_id, "balance_micros", effect.balanceDelta);
      add(accounts, entry.account_id, "held_micros", effect.heldDelta);
      if (entry.kind === "top_up" || entry.kind === "adjustment") continue;
      if (entry.key_id !== null) {
        const keyId = spendKeyOf(entry.account_id, entry.key_id);
        add(keys, keyId, "captured_micros", entry.kind === "capture" ? entry.amount_micros : 0n);
        add(keys, keyId, "held_micros", effect.heldDelta);
      }
      const field = { reserve: "reserved_micros", capture: "captured_micros", release: "released_micros" }[entry.kind];
      add(requests, entry.request_id, field, entry.amount_micros);
    }
    entriesRead += BigInt(rows.length);
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]!.entry_id;
  }
  const differences = [
    ...(await compare(q, "balance", "SELECT account_id AS id, balance_micros, held_micros FROM billing.balances", accounts, ["balance_micros", "held_micros"])),
    ...(await compare(q, "key_spend", "SELECT key_id AS id, captured_micros, held_micros FROM billing.key_spend", keys, ["captured_micros", "held_micros"])),
    ...(await compare(
      q,
      "cost_record",
      "SELECT request_id AS id, reserved_micros, captured_micros, released_micros FROM billing.cost_records",
      requests,
      ["reserved_micros", "captured_micros", "released_micros"],
    )),
  ];
  return { entriesRead, accountsChecked: accounts.size, keysChecked: keys.size, requestsChecked: requests.size, differences };
}

/** Rows missing on either side count as zero, so a stray or a lost row shows as a difference too. */
async function compare(
  q: Queryable,
  projection: ReplayDifference["projection"],
  sql: string,
  replayed: Map<string, Totals>,
  fields: string[],
): Promise<ReplayDifference[]> {
  const { rows } = await q.query<Record<string, unknown> & { id: string }>(sql);
  const live = new Map(rows.map((row) => [row.id, row]));
  const ids = new Set([...live.keys(), ...replayed.keys()]);
  const differences: ReplayDifference[] = [];
  for (const id of ids) {
    for (const field of fields) {
      const liveValue = BigInt((live.get(id)?.[field] as bigint | undefined) ?? 0n);
      const replayedValue = replayed.get(id)?.[field] ?? 0n;
      if (liveValue !== replayedValue) differences.push({ projection, id, field, live: liveValue, replayed: replayedValue });
    }
  }
  return differences;
}
