import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BillingEventSchema } from "@orvado/proto";
import type { Queryable } from "@orvado/db";
import { enqueueOutbox, outboxColumns } from "./outbox.ts";
import { BILLING_TOPIC, type OutgoingMessage } from "./types.ts";

export type BillingEventKind = NonNullable<MessageInitShape<typeof BillingEventSchema>["kind"]>;

export interface BillingEventIds {
  requestId: string;
  accountId: string;
  keyId: string;
}

/** The outbox message of one billing event: id (request, kind), keyed by account, protobuf value. */
export function billingEventMessage(ids: BillingEventIds, kind: BillingEventKind): OutgoingMessage {
  const event = create(BillingEventSchema, {
    eventId: `${ids.requestId}:${kind.case}`,
    requestId: ids.requestId,
    accountId: ids.accountId,
    keyId: ids.keyId,
    occurredAtUnixMs: BigInt(Date.now()),
    kind,
  });
  return { id: event.eventId, key: ids.accountId, value: toBinary(BillingEventSchema, event) };
}

/**
 * Writes one billing event into `schema`'s outbox, in the caller's transaction,
 * keyed by account. The event id is (request, kind): a retried write is the same
 * event, which is what lets consumers deduplicate.
 */
export async function emitBillingEvent(q: Queryable, schema: string, ids: BillingEventIds, kind: BillingEventKind): Promise<void> {
  await enqueueOutbox(q, schema, BILLING_TOPIC, billingEventMessage(ids, kind));
}

/**
 * The same events as emitBillingEvent, as outbox column arrays (outboxColumns) for a
 * caller that writes them inside a statement or function of its own.
 */
export function billingEventColumns(events: { ids: BillingEventIds; kind: BillingEventKind }[]): ReturnType<typeof outboxColumns> {
  return outboxColumns(events.map((event) => ({ topic: BILLING_TOPIC, message: billingEventMessage(event.ids, event.kind) })));
}
