import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, BillingService, CostStatus, GenerationService, ResponseFormat, type ImageJobEvent } from "@orvado/proto";
import { newRequestId } from "@orvado/core";
import { internalClient, type InternalTransport } from "@orvado/rpc";
import { startE2eStack, type E2eStack } from "./e2e-stack.ts";

// GenerationService.StreamImage called as the edge calls it, over both of libs/rpc's
// transports: "http2" (Connect over HTTP/2, the server's network stack) and "colocated"
// (in-process, messages handed over as copies by libs/rpc direct-stream.ts as ReadImage's
// are, while generation runs in this process; in the kafka project generation is another process, so both
// go over HTTP/2). Real PostgreSQL and billing behind it; the sandbox makes the previews.

let stack: E2eStack;
let auth: ReturnType<typeof internalClient<typeof AuthService>>;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;

beforeAll(async () => {
  stack = await startE2eStack();
  auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
});
afterAll(async () => {
  await stack?.close();
});

async function fundedAccount() {
  const { account } = await auth.createAccount({ email: `rpc-${Math.random().toString(36).slice(2)}@example.test`, password: "correct horse battery" });
  await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "test" });
  const key = await auth.createKey({ accountId: account!.accountId, name: "test" });
  return { accountId: account!.accountId, keyId: key.key!.keyId };
}

async function settled(requestId: string) {
  for (let attempt = 0; attempt < 400; attempt++) {
    const { cost } = await billing.getCost({ requestId }).catch(() => ({ cost: undefined }));
    if (cost && cost.status !== CostStatus.PENDING) return cost;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`cost of ${requestId} stayed pending`);
}

const kinds = (events: ImageJobEvent[]) => events.map((event) => event.event.case);

for (const transport of ["http2", "colocated"] satisfies InternalTransport[]) {
  describe(`StreamImage over the ${transport} transport`, () => {
    const generation = () => internalClient(GenerationService, stack.generationUrl, stack.internalSecret, { transport });

    it("sends started, progress with at most partial_images previews numbered from 0, then done last", async () => {
      const owner = await fundedAccount();
      const requestId = newRequestId();
      const events: ImageJobEvent[] = [];
      const call = generation().streamImage({ requestId, ...owner, model: "beta", prompt: "[sandbox:delay=500] followed", size: "256x256", partialImages: 2, responseFormat: ResponseFormat.B64_JSON });
      for await (const event of call) events.push(event);
      expect(kinds(events)[0]).toBe("started");
      expect(events[0]!.event.value).toMatchObject({ requestId, replayed: false });
      expect(kinds(events).at(-1)).toBe("done");
      const done = events.at(-1)!.event;
      expect(done.case === "done" && done.value.result.case).toBe("images");
      const progress = events.flatMap((event) => (event.event.case === "progress" ? [event.event.value] : []));
      expect(progress.filter((value) => value.partialImage !== undefined).map((value) => [value.partialImageIndex, value.partialImageMediaType])).toEqual([
        [0, "image/png"],
        [1, "image/png"],
      ]);
      const fractions = progress.flatMap((value) => (value.fraction === undefined ? [] : [value.fraction]));
      expect(fractions.length).toBeGreaterThan(0);
      expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
      expect(fractions.at(-1)).toBe(1);
    });

    it("answers a refusal before the job starts with done alone", async () => {
      const owner = await fundedAccount();
      const events: ImageJobEvent[] = [];
      for await (const event of generation().streamImage({ requestId: newRequestId(), ...owner, model: "no-such-model", prompt: "x" })) events.push(event);
      expect(kinds(events)).toEqual(["done"]);
      const done = events[0]!.event;
      expect(done.case === "done" && done.value.result.case).toBe("refusal");
    });

    it("keeps the job running and charged when the caller cancels mid-stream", async () => {
      const owner = await fundedAccount();
      const requestId = newRequestId();
      const leaving = new AbortController();
      const call = generation().streamImage({ requestId, ...owner, model: "beta", prompt: "[sandbox:delay=1000] abandoned", size: "256x256" }, { signal: leaving.signal });
      const seen: string[] = [];
      await expect(
        (async () => {
          for await (const event of call) {
            seen.push(event.event.case ?? "");
            if (event.event.case === "started") leaving.abort();
          }
        })(),
      ).rejects.toThrow();
      expect(seen).toEqual(["started"]);
      const cost = await settled(requestId);
      expect([cost.status, cost.imagesDelivered]).toEqual([CostStatus.CHARGED, 1]);
    });
  });
}
