import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, newRequestId } from "@orvado/core";
import { GenerationService } from "@orvado/proto";
import { internalClient, startRpcServer, type InternalTransport, type RpcServer } from "@orvado/rpc";
import type { Db } from "@orvado/db";
import { generationRoutes } from "./rpc.ts";
import { SegmentImageStore } from "./storage/segment-store.ts";
import { signImagePath } from "./storage/signed-links.ts";
import { openGenerationTestDb } from "./test-support.ts";

// ReadImage (rpc.ts) over real RPC, in process and Connect over loopback HTTP/2, against
// real PostgreSQL and the segment store on disk: a caller that stops reading mid-download,
// or cancels the call, leaves no file of the store open in this process.

const SECRET = "s".repeat(32);
const LINK_SECRET = "read-image-test-link-secret";
let database: Awaited<ReturnType<typeof openGenerationTestDb>>;
let dir: string;
let store: SegmentImageStore;
let server: RpcServer;

beforeAll(async () => {
  database = await openGenerationTestDb();
  dir = await mkdtemp(join(tmpdir(), "orvado-read-image-"));
  store = new SegmentImageStore(dir);
  // ReadImage reads only the database, the store and the link secret of these deps.
  const deps = { db: database.db, store, urlSigningSecret: LINK_SECRET, logger: createLogger("test", "silent") };
  server = await startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: SECRET,
    serviceNames: ["orvado.v1.GenerationService"],
    logger: createLogger("test", "silent"),
    routes: generationRoutes(deps as unknown as Parameters<typeof generationRoutes>[0]),
  });
});
afterAll(async () => {
  await server?.close();
  await store?.close?.();
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

/** An 8 MiB image stored and recorded, with its signed link's parts. */
async function storedImage(db: Db): Promise<{ imageId: string; expiresUnix: bigint; signature: string }> {
  const expiresAt = new Date(Date.now() + 3600_000);
  const imageId = await store.add(randomBytes(8 * 1024 * 1024), "image/png", { expiresAt });
  const requestId = newRequestId();
  await db.query(
    `INSERT INTO generation.jobs (request_id, account_id, key_id, model, size, tier, images_requested, response_format, channel, status, images_delivered, finished_at)
     VALUES ($1, 'acct_read_image', 'key_read_image', 'beta', '1024x1024', '1K', 1, 'URL', 'sandbox', 'succeeded', 1, now())`,
    [requestId],
  );
  await db.query(
    `INSERT INTO generation.images (image_id, request_id, position, content_type, width, height, bytes, expires_at)
     VALUES ($1, $2, 0, 'image/png', 1024, 1024, $3, $4)`,
    [imageId, requestId, 8 * 1024 * 1024, expiresAt],
  );
  const expiresUnix = Math.floor(expiresAt.getTime() / 1000);
  const signature = new URL(signImagePath(imageId, expiresUnix, LINK_SECRET), "http://x").searchParams.get("sig")!;
  return { imageId, expiresUnix: BigInt(expiresUnix), signature };
}

/** This process's open files under the store's directory (/proc/self/fd): the store's own writer, and each read. */
async function openStoreFiles(): Promise<number> {
  let count = 0;
  for (const fd of await readdir("/proc/self/fd")) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => "");
    if (target.startsWith(dir)) count += 1;
  }
  return count;
}

describe.each<InternalTransport>(["colocated", "http2"])("ReadImage over the %s transport", (transport) => {
  const client = () => internalClient(GenerationService, server.url, SECRET, { transport });

  it("closes the image's file when the caller stops reading after the content type", async () => {
    const image = await storedImage(database.db);
    const before = await openStoreFiles();
    const messages = client().readImage(image)[Symbol.asyncIterator]();
    expect((await messages.next()).value?.contentType).toBe("image/png");
    await messages.return?.();
    await expect.poll(openStoreFiles, { timeout: 5_000 }).toBe(before);
  });

  it("closes the image's file when the caller cancels mid-download", async () => {
    const controller = new AbortController();
    const image = await storedImage(database.db);
    const before = await openStoreFiles();
    const messages = client().readImage(image, { signal: controller.signal })[Symbol.asyncIterator]();
    await messages.next();
    expect((await messages.next()).value?.chunk.length).toBeGreaterThan(0);
    controller.abort();
    await messages.next().catch(() => undefined);
    await expect.poll(openStoreFiles, { timeout: 5_000 }).toBe(before);
  });
});
