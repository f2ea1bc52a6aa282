import { isRequestId } from "@orvado/core";
import type { CostRecord } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import type { ConsoleApiDeps } from "./deps.ts";

/**
 * The account's own cost record for a request id, or null. The public lookup does
 * not say whose a request is, so the record is fetched again through the
 * account-scoped listing around its creation time: another account's id finds nothing.
 */
export async function ownCost(billing: ConsoleApiDeps["billing"], accountId: string, requestId: string): Promise<CostRecord | null> {
  if (!isRequestId(requestId)) return null;
  const found = await billing.getCost({ requestId }).catch((error: unknown) => {
    if (error instanceof ConnectError && error.code === Code.NotFound) return null;
    throw error;
  });
  const createdAt = found?.cost?.createdAtUnixMs;
  if (createdAt === undefined) return null;
  const page = await billing.listCostRecords({ accountId, fromUnixMs: createdAt - 1n, toUnixMs: createdAt + 2n, limit: 1000 });
  return page.records.find((record) => record.requestId === requestId) ?? null;
}
