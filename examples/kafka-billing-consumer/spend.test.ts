import { describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { BillingEventSchema, ErrorCode, Tier, type BillingEvent } from "@orvado/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { SpendByAccount, billingEventJson, decodeBillingEvent } from "./spend.ts";

type KindInit = MessageInitShape<typeof BillingEventSchema>["kind"];

const event = (requestId: string, kind: KindInit): BillingEvent =>
  create(BillingEventSchema, {
    eventId: `${requestId}:${kind?.case}`,
    requestId,
    accountId: "acct_a",
    keyId: "key_k",
    occurredAtUnixMs: 1_795_239_249_324n,
    kind,
  });

const reserved = (requestId: string, n = 2) =>
  event(requestId, { case: "reserved", value: { model: "beta", tier: Tier.TIER_1K, size: "1024x1024", imagesRequested: n, unitPriceMicros: 20_000n, amountMicros: 20_000n * BigInt(n) } });

describe("the example analyst consumer", () => {
  it("decodes the binary value and prints the documented JSON form", () => {
    const decoded = decodeBillingEvent(toBinary(BillingEventSchema, reserved("req_1")));
    expect(billingEventJson(decoded)).toEqual({
      eventId: "req_1:reserved",
      requestId: "req_1",
      accountId: "acct_a",
      keyId: "key_k",
      occurredAtUnixMs: "1795239249324",
      reserved: { model: "beta", tier: "TIER_1K", size: "1024x1024", imagesRequested: 2, unitPriceMicros: "20000", amountMicros: "40000" },
    });
  });

  it("counts charges once whatever the order and however often events repeat", () => {
    const spend = new SpendByAccount();
    const completed = event("req_1", { case: "completed", value: { imagesDelivered: 1 } });
    const failed = event("req_2", { case: "failed", value: { code: ErrorCode.ASYNC_IMAGE_FAILED, reason: "x" } });
    // completed before its reserved, and everything twice
    for (const message of [completed, reserved("req_1"), completed, reserved("req_2"), failed, reserved("req_1")]) spend.add(message);
    expect(spend.totals()).toEqual(new Map([["acct_a", 20_000n]]));
  });
});
