import type { FastifyInstance } from "fastify";
import { CostStatus, ErrorCode, type BillingService, type CostRecord } from "@orvado/proto";
import { Code, ConnectError, type Client } from "@orvado/rpc";
import { isRequestId, microsToUsd, tierName } from "@orvado/core";
import { sendError, sendRefusal } from "../reply.ts";

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

/**
 * GET /api/cost/request/<id> (docs/api.md#the-cost-record). Unauthenticated: ids carry 128 random bits,
 * and billing counts each well-formed lookup against the client's address (429 past
 * its limit), so the lookup is no free oracle for guessing them.
 */
export function costRoutes(app: FastifyInstance, deps: { billing: Client<typeof BillingService> }) {
  app.get<{ Params: { id: string } }>("/api/cost/request/:id", async (request, reply) => {
    const notFound = () => sendError(request, reply, ErrorCode.NOT_FOUND, `No request ${JSON.stringify(request.params.id.slice(0, 64))}`);
    if (!isRequestId(request.params.id)) return notFound();
    try {
      const { cost, refusal } = await deps.billing.getCost({ requestId: request.params.id, clientAddress: request.ip });
      if (refusal) return sendRefusal(request, reply, refusal);
      return cost ? costJson(cost) : notFound();
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.NotFound) return notFound();
      throw error;
    }
  });
}
