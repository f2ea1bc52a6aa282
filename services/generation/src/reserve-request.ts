import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateImageRequest, ReserveRequestSchema } from "@orvado/proto";
import type { BillingEventIds } from "@orvado/events";
import type { JobSpec } from "./validate.ts";

/** What a job asks billing to hold: the price of its model, tier and n against the account and the key's own limit. */
export function reserveRequestFor(req: CreateImageRequest, spec: JobSpec, ids: BillingEventIds): MessageInitShape<typeof ReserveRequestSchema> {
  return {
    ...ids,
    keyLimitMicros: req.keyLimitMicros,
    model: spec.model.id,
    tier: spec.tier,
    size: spec.size.label,
    imagesRequested: spec.n,
    user: req.user,
  };
}
