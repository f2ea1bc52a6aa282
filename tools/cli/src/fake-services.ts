import { createLogger } from "@orvado/core";
import {
  AuthService,
  BillingService,
  CostStatus,
  Role,
  Tier,
  type CreateAccountRequest,
  type CreateKeyRequest,
  type GetAccountRequest,
  type GetBalanceRequest,
  type GetCostRequest,
  type TopUpRequest,
} from "@orvado/proto";
import { Code, ConnectError, startRpcServer, type RpcServer } from "@orvado/rpc";
import { runCli } from "./index.ts";

// Test double for the auth and billing services (written in parallel): just enough
// behaviour for the CLI's tests, recording every request it receives. They listen on a
// real port; the CLI's client, in the same process, calls them in-process through the
// server's interceptors (libs/rpc in-process.ts), not over a socket.

export const FAKE_SECRET = "fake-internal-secret";
export const KNOWN_ACCOUNT = "acct_known0000000000000";
export const KNOWN_REQUEST = "req_AAAAAAAAAAAAAAAAAAAAAA";
export const PENDING_REQUEST = "req_BBBBBBBBBBBBBBBBBBBBBB";
export const CREATED_AT_MS = 1_767_225_600_000n; // 2026-01-01T00:00:00.000Z

export interface Recorded {
  createAccount: CreateAccountRequest[];
  getAccount: GetAccountRequest[];
  createKey: CreateKeyRequest[];
  topUp: TopUpRequest[];
  getBalance: GetBalanceRequest[];
  getCost: GetCostRequest[];
  listPrices: number;
}

export interface FakeServices {
  server: RpcServer;
  recorded: Recorded;
  /** How many requests of any kind reached the fakes. */
  total(): number;
  close(): Promise<void>;
}

const notFound = (what: string) => new ConnectError(`${what} not found`, Code.NotFound);

export async function startFakeServices(secret = FAKE_SECRET): Promise<FakeServices> {
  const recorded: Recorded = {
    createAccount: [],
    getAccount: [],
    createKey: [],
    topUp: [],
    getBalance: [],
    getCost: [],
    listPrices: 0,
  };
  const accounts = new Map([
    [KNOWN_ACCOUNT, { email: "known@example.com", role: Role.USER, disabled: false }],
    // An account with no money yet, for top-ups (which look the account up first).
    ["acct_fresh", { email: "fresh@example.com", role: Role.USER, disabled: false }],
  ]);
  const balances = new Map([[KNOWN_ACCOUNT, { balance: 5_000_000n, held: 120_000n }]]);
  const balanceOf = (accountId: string) => {
    const { balance, held } = balances.get(accountId) ?? { balance: 0n, held: 0n };
    return { accountId, balanceMicros: balance, heldMicros: held, availableMicros: balance - held };
  };

  const server = await startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret,
    serviceNames: [AuthService.typeName, BillingService.typeName],
    logger: createLogger("test", "silent"),
    routes: (router) => {
      router.service(AuthService, {
        createAccount(req) {
          recorded.createAccount.push(req);
          const accountId = `acct_new${String(recorded.createAccount.length).padStart(16, "0")}`;
          accounts.set(accountId, { email: req.email, role: req.role, disabled: false });
          return { account: { accountId, email: req.email, role: req.role, createdAtUnixMs: CREATED_AT_MS } };
        },
        getAccount(req) {
          recorded.getAccount.push(req);
          const account = accounts.get(req.accountId);
          if (!account) throw notFound(`account ${req.accountId}`);
          return { account: { accountId: req.accountId, ...account, createdAtUnixMs: CREATED_AT_MS } };
        },
        createKey(req) {
          recorded.createKey.push(req);
          if (!accounts.has(req.accountId)) throw notFound(`account ${req.accountId}`);
          const { accountId, name, limitMicros, expiresAtUnixMs, models } = req;
          return {
            key: { keyId: "key_fake1", accountId, name, limitMicros, expiresAtUnixMs, models, prefix: "td-fake" },
            secret: "td-fakesecretvalue",
          };
        },
      });
      router.service(BillingService, {
        topUp(req) {
          recorded.topUp.push(req);
          const current = balances.get(req.accountId) ?? { balance: 0n, held: 0n };
          balances.set(req.accountId, { ...current, balance: current.balance + req.amountMicros });
          return { balance: balanceOf(req.accountId) };
        },
        getBalance(req) {
          recorded.getBalance.push(req);
          return { balance: balanceOf(req.accountId) };
        },
        getCost(req) {
          recorded.getCost.push(req);
          if (req.requestId === KNOWN_REQUEST) {
            return {
              cost: {
                requestId: req.requestId,
                status: CostStatus.CHARGED,
                model: "sandbox-alpha",
                size: "2048x1024",
                tier: Tier.TIER_2K,
                imagesRequested: 3,
                imagesDelivered: 2,
                unitPriceMicros: 40_000n,
                amountMicros: 80_000n,
                createdAtUnixMs: CREATED_AT_MS,
                settledAtUnixMs: CREATED_AT_MS + 31_500n,
              },
            };
          }
          if (req.requestId === PENDING_REQUEST) {
            return {
              cost: {
                requestId: req.requestId,
                status: CostStatus.PENDING,
                model: "sandbox-beta",
                size: "1024x1024",
                tier: Tier.TIER_1K,
                imagesRequested: 1,
                imagesDelivered: 0,
                unitPriceMicros: 1_500_000n,
                amountMicros: 0n,
                createdAtUnixMs: CREATED_AT_MS,
              },
            };
          }
          throw notFound(`request ${req.requestId}`);
        },
        listPrices() {
          recorded.listPrices += 1;
          return {
            prices: [
              { model: "sandbox-alpha", tier: Tier.TIER_1K, priceMicros: 20_000n },
              { model: "sandbox-alpha", tier: Tier.TIER_4K, priceMicros: 1_234_567n },
            ],
          };
        },
      });
    },
  });

  return {
    server,
    recorded,
    total: () =>
      recorded.listPrices +
      [recorded.createAccount, recorded.getAccount, recorded.createKey, recorded.topUp, recorded.getBalance, recorded.getCost]
        .map((list) => list.length)
        .reduce((a, b) => a + b, 0),
    close: () => server.close(),
  };
}

/** Runs the CLI in-process, capturing what it prints. */
export async function run(argv: string[], env: NodeJS.ProcessEnv) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), env });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> };
}
