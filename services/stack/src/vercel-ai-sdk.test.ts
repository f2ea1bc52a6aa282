import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateImage } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";

// The Vercel AI SDK, unmodified, pointed at Orvado as an OpenAI provider (over real
// HTTP to the edge): generateImage with the OpenAI image model, including OpenAI's
// own fields (user, output_format) as provider options, and the charge it leaves.

let stack: E2eStack;
let key: string;
let accountId: string;
const BETA_1K_MICROS = 20_000n; // config/prices.json: beta 1K = $0.02

beforeAll(async () => {
  stack = await startE2eStack();
  const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
  const { account } = await auth.createAccount({ email: "vercel-ai@example.test", password: "vercel ai sdk pw" });
  accountId = account!.accountId;
  await billing.topUp({ accountId, amountMicros: 1_000_000n, note: "ai sdk test" });
  key = (await auth.createKey({ accountId, name: "ai-sdk" })).secret;
});
afterAll(async () => {
  await stack?.close();
});

describe("the Vercel AI SDK's generateImage against Orvado (HTTP)", () => {
  it("generates an image of the requested size and Orvado charges its price", async () => {
    const provider = createOpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1` });
    const { images } = await generateImage({ model: provider.image("beta"), prompt: "a lighthouse at dusk", size: "1536x1024", maxRetries: 0 });
    expect(images).toHaveLength(1);
    const meta = await sharp(Buffer.from(images[0]!.uint8Array)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 1536, 1024]);
    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    let balance = (await billing.getBalance({ accountId })).balance!;
    for (let attempt = 0; balance.heldMicros > 0n && attempt < 400; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      balance = (await billing.getBalance({ accountId })).balance!;
    }
    expect(balance.balanceMicros).toBe(1_000_000n - BETA_1K_MICROS);
  });

  it("passes OpenAI's provider options through: output_format webp and user", async () => {
    const provider = createOpenAI({ apiKey: key, baseURL: `${stack.edgeUrl}/v1` });
    const { images } = await generateImage({
      model: provider.image("beta"),
      prompt: "a red fox",
      size: "1024x1024",
      providerOptions: { openai: { outputFormat: "webp", user: "ai-sdk-user" } },
      maxRetries: 0,
    });
    expect((await sharp(Buffer.from(images[0]!.uint8Array)).metadata()).format).toBe("webp");
  });
});
