// The funded accounts a benchmarked Orvado serves: each made through auth, topped
// up through billing and given one key, over the same internal RPC the CLI uses.
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";

/** $1,000,000: the largest single top-up billing accepts, more than any run spends. */
const FUNDS_MICROS = 1_000_000n * 1_000_000n;

export interface BenchAccount {
  accountId: string;
  key: string;
}

export interface FundingServices {
  /** One URL or every replica's. */
  authUrls: string | readonly string[];
  billingUrls: string | readonly string[];
  internalSecret: string;
}

/** `count` (at least 1) accounts named `<label>-<n>@example.test`, each funded and with a key. */
export async function fundBenchAccounts(services: FundingServices, count: number, label: string): Promise<BenchAccount[]> {
  const auth = internalClient(AuthService, services.authUrls, services.internalSecret);
  const billing = internalClient(BillingService, services.billingUrls, services.internalSecret);
  const accounts: BenchAccount[] = [];
  for (let index = 0; index < Math.max(1, count); index += 1) {
    const { account } = await auth.createAccount({ email: `${label}-${index}@example.test`, password: "bench password 1" });
    const accountId = account!.accountId;
    await billing.topUp({ accountId, amountMicros: FUNDS_MICROS, note: "benchmark funds", topUpId: `${label}_${index}` });
    const { secret: key } = await auth.createKey({ accountId, name: label });
    accounts.push({ accountId, key });
  }
  return accounts;
}
