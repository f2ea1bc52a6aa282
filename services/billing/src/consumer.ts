import { fromBinary } from "@bufbuild/protobuf";
import { BillingEventSchema } from "@orvado/proto";
import { BILLING_TOPIC, type EventStream, type Subscription } from "@orvado/events";
import type { Db } from "@orvado/db";
import type { Logger } from "@orvado/core";
import { settle, type SettleResult, type Settlement } from "./settle.ts";

export const LEDGER_GROUP = "billing-ledger";

/** Told of every settlement event handled, with what it did; for metrics and for the tests that count them. */
export type SettlementObserver = (eventId: string, result: SettleResult) => void;

/** Folds completed/failed events from the stream into the ledger. */
export function startSettlementConsumer(stream: EventStream, db: Db, logger: Logger, observe?: SettlementObserver): Promise<Subscription> {
  return stream.subscribe({
    topic: BILLING_TOPIC,
    group: LEDGER_GROUP,
    async handle(message) {
      const event = fromBinary(BillingEventSchema, message.value);
      const settlement = settlementOf(event.kind);
      if (!settlement) return; // `reserved` is billing's own event, already in the ledger
      const result = await settle(db, event.requestId, settlement);
      observe?.(event.eventId, result);
      const log = logger.child({ requestId: event.requestId, event: event.kind.case });
      if (result === "unknown_request") log.warn("settlement for a request billing never reserved");
      else log.debug({ result }, "settled");
    },
  });
}

function settlementOf(kind: ReturnType<typeof fromBinary<typeof BillingEventSchema>>["kind"]): Settlement | null {
  switch (kind.case) {
    case "completed":
      return { kind: "completed", imagesDelivered: kind.value.imagesDelivered };
    case "failed":
      return { kind: "failed", reason: kind.value.reason };
    default:
      return null;
  }
}
