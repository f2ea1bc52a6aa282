import type { EntryKind } from "./ledger.ts";

// The one definition of what a ledger entry does to balances. Replay, statements
// and the invariant tests all fold entries with it, so the projections settle.ts
// maintains can be checked against a second, independent reading of the ledger.

export interface FoldEntry {
  kind: EntryKind;
  request_id: string;
  amount_micros: bigint;
}

export interface FoldState {
  balanceMicros: bigint;
  heldMicros: bigint;
  /** What each request still has on hold. */
  stillHeld: Map<string, bigint>;
}

export const emptyFold = (): FoldState => ({ balanceMicros: 0n, heldMicros: 0n, stillHeld: new Map() });

/** The entry's effect: how it moved the balance and the amount held. */
export interface EntryEffect {
  balanceDelta: bigint;
  heldDelta: bigint;
}

/**
 * top-up and adjustment move the balance; reserve holds; release frees the hold;
 * capture charges the balance and frees only what the request still had on hold
 * (nothing, when its hold had already expired or failed and been released).
 */
export function foldEntry(state: FoldState, entry: FoldEntry): EntryEffect {
  const held = state.stillHeld.get(entry.request_id) ?? 0n;
  const amount = entry.amount_micros;
  let effect: EntryEffect;
  switch (entry.kind) {
    case "top_up":
    case "adjustment":
      effect = { balanceDelta: amount, heldDelta: 0n };
      break;
    case "reserve":
      effect = { balanceDelta: 0n, heldDelta: amount };
      break;
    case "capture":
      effect = { balanceDelta: -amount, heldDelta: -(amount < held ? amount : held) };
      break;
    case "release":
      effect = { balanceDelta: 0n, heldDelta: -amount };
      break;
  }
  state.balanceMicros += effect.balanceDelta;
  state.heldMicros += effect.heldDelta;
  if (effect.heldDelta !== 0n) state.stillHeld.set(entry.request_id, held + effect.heldDelta);
  return effect;
}
