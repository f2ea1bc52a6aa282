import { fromBinary } from "@bufbuild/protobuf";
import { BillingEventSchema, type BillingEvent } from "@orvado/proto";
import { BILLING_TOPIC, type DeliveredMessage, type EventStream, type Subscription } from "@orvado/events";
import type { Db } from "@orvado/db";
import type { Logger } from "@orvado/core";
import { settle, settleBatch, type SettleResult, type Settlement } from "./settle.ts";

export const LEDGER_GROUP = "billing-ledger";

/** Told of every settlement event handled, with what it did; for metrics and for the tests that count them. */
export type SettlementObserver = (eventId: string, result: SettleResult) => void;

interface SettlementEvent {
  event: BillingEvent;
  settlement: Settlement;
}

/**
 * Folds completed/failed events from the stream into the ledger. A batch read
 * from the stream is settled in one statement (settleBatch), so settling keeps
 * up with requests arriving; the stream falls back to one event at a time if a
 * batch fails, so one bad event holds back only itself.
 */
export function startSettlementConsumer(stream: EventStream, db: Db, logger: Logger, observe?: SettlementObserver): Promise<Subscription> {
  const report = (event: BillingEvent, result: SettleResult) => {
    observe?.(event.eventId, result);
    const log = logger.child({ requestId: event.requestId, event: event.kind.case });
    if (result === "unknown_request") log.warn("settlement for a request billing never reserved");
    else log.debug({ result }, "settled");
  };
  return stream.subscribe({
    topic: BILLING_TOPIC,
    group: LEDGER_GROUP,
    async handle(message) {
      const item = settlementEvent(message);
      if (item) report(item.event, await settle(db, item.event.requestId, item.settlement));
    },
    async handleBatch(messages) {
      const items = messages.map(settlementEvent).filter((item) => item !== null);
      const results = await settleBatch(db, items.map(({ event, settlement }) => ({ requestId: event.requestId, accountId: event.accountId, settlement })));
      items.forEach((item, index) => report(item.event, results[index]!));
    },
  });
}

/** null for events that settle nothing: `reserved` is billing's own, already in the ledger. */
function settlementEvent(message: DeliveredMessage): SettlementEvent | null {
  const event = fromBinary(BillingEventSchema, message.value);
  const settlement = settlementOf(event.kind);
  return settlement ? { event, settlement } : null;
}

function settlementOf(kind: BillingEvent["kind"]): Settlement | null {
  switch (kind.case) {
    case "completed":
      return { kind: "completed", imagesDelivered: kind.value.imagesDelivered };
    case "failed":
      return { kind: "failed", reason: kind.value.reason };
    default:
      return null;
  }
}
