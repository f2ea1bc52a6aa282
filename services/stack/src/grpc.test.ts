import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, BillingService, GenerationService, ErrorCode, Tier, health } from "@orvado/proto";
import { grpcJsClient } from "@orvado/testkit";
import { startTestStack, type TestStack } from "./harness.ts";

// The "internal callers" of the design card: plain @grpc/grpc-js, no Connect.

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.close();
});

const UNAUTHENTICATED = 16;

describe("every service over plain grpc-js", () => {
  it("answers grpc.health.v1 Check with SERVING, without the secret", async () => {
    const services = [
      [stack.authUrl, AuthService.typeName],
      [stack.billingUrl, BillingService.typeName],
      [stack.generationUrl, GenerationService.typeName],
    ] as const;
    for (const [url, name] of services) {
      const client = grpcJsClient(health.Health, url);
      const answer = await client.call<{ status: number }>("check", { service: name });
      expect(answer.status, name).toBe(health.HealthCheckResponse_ServingStatus.SERVING);
      const overall = await client.call<{ status: number }>("check", { service: "" });
      expect(overall.status).toBe(health.HealthCheckResponse_ServingStatus.SERVING);
      client.close();
    }
  });

  it("refuses calls without the shared secret, or with a wrong one, on every service", async () => {
    const calls = [
      [AuthService, stack.authUrl, "getAccount", { accountId: "acct_x" }],
      [BillingService, stack.billingUrl, "listPrices", {}],
      [GenerationService, stack.generationUrl, "listModels", {}],
    ] as const;
    for (const [service, url, method, request] of calls) {
      for (const secret of [undefined, "not-the-secret-at-all"]) {
        const client = grpcJsClient(service, url, secret);
        const error = await client.call(method, request).catch((caught: { code: number }) => caught);
        expect((error as { code: number }).code, `${service.typeName} ${secret}`).toBe(UNAUTHENTICATED);
        client.close();
      }
    }
  });

  it("lets an internal caller create an account, fund it, reserve, and read prices and models", async () => {
    const auth = grpcJsClient(AuthService, stack.authUrl, stack.internalSecret);
    const billing = grpcJsClient(BillingService, stack.billingUrl, stack.internalSecret);
    const generation = grpcJsClient(GenerationService, stack.generationUrl, stack.internalSecret);

    const { account } = await auth.call<{ account: { accountId: string } }>("createAccount", { email: "grpc@example.test", password: "long enough pw" });
    const { balance } = await billing.call<{ balance: { availableMicros: bigint } }>("topUp", { accountId: account.accountId, amountMicros: 50_000n, note: "grpc", topUpId: "grpc-topup-1" });
    expect(balance.availableMicros).toBe(50_000n);

    const reserve = (requestId: string) =>
      billing.call<{ result: { case: string; value: { amountMicros?: bigint; code?: ErrorCode } } }>("reserve", {
        requestId, accountId: account.accountId, keyId: "key_grpc", model: "beta", tier: Tier.TIER_1K, size: "1024x1024", imagesRequested: 2,
      });
    const first = await reserve("req_grpcjsAAAAAAAAAAAAAAAA");
    expect(first.result).toMatchObject({ case: "hold", value: { amountMicros: 40_000n } });
    const second = await reserve("req_grpcjsBBBBBBBBBBBBBBBB");
    expect(second.result).toMatchObject({ case: "refusal", value: { code: ErrorCode.INSUFFICIENT_USER_QUOTA } });

    const prices = await billing.call<{ prices: unknown[] }>("listPrices", {});
    expect(prices.prices.length).toBeGreaterThan(6);
    const models = await generation.call<{ models: Array<{ id: string }> }>("listModels", {});
    expect(models.models.map((model) => model.id)).toContain("beta-pro");
    for (const client of [auth, billing, generation]) client.close();
  });
});
