// What an analyst usually wants from orvado.billing.v1: charged USD per account,
// computed the way billing itself does it. Events arrive at least once and in no
// guaranteed order across producers, so this keeps per-request state and
// ignores repeats by event id. Pure functions: no Kafka here, so it is testable.
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { BillingEventSchema, type BillingEvent } from "@orvado/proto";

export function decodeBillingEvent(value: Uint8Array): BillingEvent {
  return fromBinary(BillingEventSchema, value);
}

/** The canonical proto3 JSON form documented in docs/events.md (int64 as strings, enums by name). */
export function billingEventJson(event: BillingEvent) {
  return toJson(BillingEventSchema, event);
}

interface RequestState {
  accountId: string;
  unitPriceMicros?: bigint;
  imagesDelivered?: number;
}

export class SpendByAccount {
  readonly #seen = new Set<string>();
  readonly #requests = new Map<string, RequestState>();

  /** Returns false for an event already counted (a redelivery). */
  add(event: BillingEvent): boolean {
    if (this.#seen.has(event.eventId)) return false;
    this.#seen.add(event.eventId);
    const state = this.#requests.get(event.requestId) ?? { accountId: event.accountId };
    if (event.kind.case === "reserved") state.unitPriceMicros = event.kind.value.unitPriceMicros;
    // A completed always wins over a failed (billing settles it the same way).
    if (event.kind.case === "completed") state.imagesDelivered = event.kind.value.imagesDelivered;
    this.#requests.set(event.requestId, state);
    return true;
  }

  /** Charged micro-USD per account: unit price × images delivered, for requests with both events seen. */
  totals(): Map<string, bigint> {
    const totals = new Map<string, bigint>();
    for (const request of this.#requests.values()) {
      if (request.unitPriceMicros === undefined || request.imagesDelivered === undefined) continue;
      const charged = request.unitPriceMicros * BigInt(request.imagesDelivered);
      totals.set(request.accountId, (totals.get(request.accountId) ?? 0n) + charged);
    }
    return totals;
  }
}
