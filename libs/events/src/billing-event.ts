import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BillingEventSchema } from "@orvado/proto";
import type { Queryable } from "@orvado/db";
import { enqueueOutbox } from "./outbox.ts";
import { BILLING_TOPIC } from "./types.ts";

export type BillingEventKind = NonNullable<MessageInitShape<typeof BillingEventSchema>["kind"]>;

export interface BillingEventIds {
  requestId: string;
  accountId: string;
  keyId: string;
}

/**
 * Writes one billing event into `schema`'s outbox, in the caller's transaction,
 * keyed by account. The event id is (request, kind): a retried write is the same
 * event, which is what lets consumers deduplicate.
 */
export async function emitBillingEvent(q: Queryable, schema: string, ids: BillingEventIds, kind: BillingEventKind): Promise<void> {
  const event = create(BillingEventSchema, {
    eventId: `${ids.requestId}:${kind.case}`,
    requestId: ids.requestId,
    accountId: ids.accountId,
    keyId: ids.keyId,
    occurredAtUnixMs: BigInt(Date.now()),
    kind,
  });
  await enqueueOutbox(q, schema, BILLING_TOPIC, {
    id: event.eventId,
    key: ids.accountId,
    value: toBinary(BillingEventSchema, event),
  });
}
