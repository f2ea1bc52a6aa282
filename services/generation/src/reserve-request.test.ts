import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { CreateImageRequestSchema, ReserveRequestSchema, Tier } from "@orvado/proto";
import { parseCatalog } from "./catalog.ts";
import { validateImageRequest } from "./validate.ts";
import { reserveRequestFor } from "./reserve-request.ts";

// In process: what generation asks billing to hold for a validated job.

const catalog = parseCatalog({ models: [{ id: "beta", family: "beta", tiers: ["1K", "2K"], channels: [{ name: "s", provider: "sandbox", capacity: 1 }] }] });

function job(index: number) {
  const req = create(CreateImageRequestSchema, { requestId: `req_${index}`, accountId: "acct_1", keyId: "key_1", keyLimitMicros: 5_000_000n, model: "beta", prompt: "x", size: "2048x2048", n: 2, user: "u-7" });
  const check = validateImageRequest(req, catalog, 4);
  if (!check.ok) throw new Error(check.refusal.message);
  return { req, spec: check.spec, ids: { requestId: req.requestId, accountId: req.accountId, keyId: req.keyId } };
}

describe("reserveRequestFor", () => {
  it("asks for the job's model, tier, size and n against its account and key, with the key's own limit", () => {
    const { req, spec, ids } = job(1);
    expect(create(ReserveRequestSchema, reserveRequestFor(req, spec, ids))).toMatchObject({
      requestId: "req_1",
      accountId: "acct_1",
      keyId: "key_1",
      keyLimitMicros: 5_000_000n,
      model: "beta",
      tier: Tier.TIER_2K,
      size: "2048x2048",
      imagesRequested: 2,
      user: "u-7",
    });
  });
});
