import type { FastifyInstance } from "fastify";
import { CostStatus, ErrorCode, type BillingService, type CostRecord } from "@orvado/proto";
import { Code, ConnectError, type Client } from "@orvado/rpc";
import { isRequestId, microsToUsd, tierName } from "@orvado/core";
import { sendError } from "../reply.ts";

const STATUS: Record<CostStatus, string> = {
  [CostStatus.UNSPECIFIED]: "pending",
  [CostStatus.PENDING]: "pending",
  [CostStatus.CHARGED]: "charged",
  [CostStatus.NOT_CHARGED]: "not_charged",
};

const iso = (unixMs: bigint | undefined) => (unixMs === undefined ? null : new Date(Number(unixMs)).toISOString());

/** The public cost record (docs/api.md): no prompt, key or account in it. */
export function costJson(cost: CostRecord) {
  return {
    request_id: cost.requestId,
    status: STATUS[cost.status],
    model: cost.model,
    size: cost.size,
    tier: tierName(cost.tier),
    images_requested: cost.imagesRequested,
    images_delivered: cost.imagesDelivered,
    currency: "USD",
    unit_price_usd: microsToUsd(cost.unitPriceMicros),
    unit_price_micros: Number(cost.unitPriceMicros),
    amount_usd: microsToUsd(cost.amountMicros),
    amount_micros: Number(cost.amountMicros),
    created_at: iso(cost.createdAtUnixMs),
    settled_at: iso(cost.settledAtUnixMs),
  };
}

/** GET /api/cost/request/<id> (spec 4.2). Unauthenticated: ids carry 128 random bits. */
export function costRoutes(app: FastifyInstance, deps: { billing: Client<typeof BillingService> }) {
  app.get<{ Params: { id: string } }>("/api/cost/request/:id", async (request, reply) => {
    const notFound = () => sendError(request, reply, ErrorCode.NOT_FOUND, `No request ${JSON.stringify(request.params.id.slice(0, 64))}`);
    if (!isRequestId(request.params.id)) return notFound();
    try {
      const { cost } = await deps.billing.getCost({ requestId: request.params.id });
      return cost ? costJson(cost) : notFound();
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.NotFound) return notFound();
      throw error;
    }
  });
}
