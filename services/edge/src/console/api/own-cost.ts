import { isRequestId } from "@orvado/core";
import type { CostRecord } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import type { ConsoleApiDeps } from "./deps.ts";

/**
 * The account's own cost record for a request id (with its key id), or null.
 * Billing's GetCost scoped by account answers NOT_FOUND for another account's
 * request exactly as for an unknown one, so ids never leak between tenants.
 */
export async function ownCost(billing: ConsoleApiDeps["billing"], accountId: string, requestId: string): Promise<CostRecord | null> {
  if (!isRequestId(requestId)) return null;
  try {
    return (await billing.getCost({ requestId, accountId })).cost ?? null;
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound) return null;
    throw error;
  }
}
