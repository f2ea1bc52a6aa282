import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import sharp from "sharp";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error s3rver ships no type declarations
import S3rver from "s3rver";
import { startTestStack, type TestStack } from "./harness.ts";

// The whole stack with images in an S3-compatible bucket (s3rver on 127.0.0.1 over
// real HTTP): links are still the edge's signed /v1/files links, proxied from the bucket.

const BUCKET = "orvado-stack";
// s3rver's fixed development credentials.
const CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
let s3dir: string;
let s3server: { close(): Promise<void> };
let s3: { config: { bucket: string; endpoint: string; region: string; forcePathStyle: boolean; credentials: typeof CREDENTIALS } };
let stack: TestStack;

beforeAll(async () => {
  s3dir = await mkdtemp(join(tmpdir(), "orvado-s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: s3dir, configureBuckets: [{ name: BUCKET }] });
  const { port } = (await server.run()) as { port: number };
  s3server = server;
  s3 = { config: { bucket: BUCKET, endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS } };
  stack = await startTestStack({
    GENERATION_STORAGE: "s3",
    GENERATION_S3_BUCKET: s3.config.bucket,
    GENERATION_S3_ENDPOINT: s3.config.endpoint,
    GENERATION_S3_REGION: s3.config.region,
    GENERATION_S3_FORCE_PATH_STYLE: "true",
    GENERATION_S3_ACCESS_KEY_ID: s3.config.credentials.accessKeyId,
    GENERATION_S3_SECRET_ACCESS_KEY: s3.config.credentials.secretAccessKey,
    GENERATION_S3_PREFIX: "stack/",
  });
});
afterAll(async () => {
  await stack?.close();
  await s3server?.close();
  if (s3dir) await rm(s3dir, { recursive: true, force: true });
});

describe("S3 image storage", () => {
  it("stores the image in the bucket and serves it through the edge's signed link", async () => {
    const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
    const billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
    const { account } = await auth.createAccount({ email: `s3-${randomUUID()}@example.test`, password: "correct horse battery" });
    await billing.topUp({ accountId: account!.accountId, amountMicros: 1_000_000n, note: "test" });
    const { secret } = await auth.createKey({ accountId: account!.accountId, name: "test" });

    const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: "beta", prompt: "a bucket of paint", size: "640x480" }),
    });
    expect(response.status).toBe(200);
    const url: string = ((await response.json()) as { data: Array<{ url: string }> }).data[0]!.url;
    const imageId = /\/v1\/files\/(img_[A-Za-z0-9_-]+)\.png/.exec(url)![1]!;

    const client = new S3Client({ ...s3.config });
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.config.bucket }));
    client.destroy();
    expect((listed.Contents ?? []).map((object) => object.Key)).toContain(`stack/${imageId}`);

    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("image/png");
    const meta = await sharp(Buffer.from(await download.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 640, 480]);
  });

  it("refuses to start with GENERATION_STORAGE=s3 and no bucket, naming the variable", async () => {
    const { loadGenerationConfig } = await import("@orvado/generation");
    expect(() => loadGenerationConfig({ ORVADO_INTERNAL_SECRET: "x".repeat(16), ORVADO_URL_SIGNING_SECRET: "y".repeat(16), GENERATION_STORAGE: "s3" })).toThrow(
      /GENERATION_S3_BUCKET: is required/,
    );
  });
});
