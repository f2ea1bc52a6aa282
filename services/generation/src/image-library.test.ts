import { describe, expect, it } from "vitest";
import sharp from "sharp";
import { IMAGE_WORK_AT_ONCE, loadSharp, withImageWork } from "./image-library.ts";
import { encodeImage } from "./output-format.ts";
import { fitToSize } from "./providers/fit.ts";

// In process, no transport: the places for whole-image work (one per core) and sharp's settings.

/** A place taken until release() is called: what another image's work looks like from outside. */
function heldPlace() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const started = new Promise<void>((resolve) => void withImageWork(() => (resolve(), released)));
  return { started, release };
}

/** Every place taken, as by other images' work, until release(). */
async function everyPlaceHeld() {
  const places = Array.from({ length: IMAGE_WORK_AT_ONCE }, heldPlace);
  await Promise.all(places.map((place) => place.started));
  return { release: () => places.forEach((place) => place.release()) };
}

/** Whether the promise settled within a few turns of the event loop and a short wait. */
async function settlesSoon(promise: Promise<unknown>, ms = 300): Promise<boolean> {
  return Promise.race([promise.then(() => true, () => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

describe("withImageWork", () => {
  it("runs at most one work per core at once, the rest in order as places free", async () => {
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const works = Array.from({ length: 3 * IMAGE_WORK_AT_ONCE }, (_, index) =>
      withImageWork(async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        order.push(index);
        running -= 1;
      }),
    );
    await Promise.all(works);
    expect(most).toBe(IMAGE_WORK_AT_ONCE);
    expect(order).toEqual(works.map((_, index) => index));
  });

  it("gives the place back when the work fails", async () => {
    const failures = Array.from({ length: IMAGE_WORK_AT_ONCE }, () => withImageWork(async () => Promise.reject(new Error("bad image"))));
    for (const failure of failures) await expect(failure).rejects.toThrow("bad image");
    expect(await settlesSoon(withImageWork(async () => "next"))).toBe(true);
  });

  it("is what encodeImage and fitToSize wait for when every place is taken", async () => {
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#336699" } }).png().toBuffer();
    const held = await everyPlaceHeld();
    const webp = encodeImage(png, { format: "webp", compression: undefined });
    const resized = fitToSize(png, 20, 15);
    expect(await settlesSoon(webp)).toBe(false);
    expect(await settlesSoon(resized)).toBe(false);
    held.release();
    expect((await webp).contentType).toBe("image/webp");
    expect((await resized).resized).toBe(true);
  });

  it("does not hold back a PNG of the asked size, which is never decoded", async () => {
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#336699" } }).png().toBuffer();
    const held = await everyPlaceHeld();
    expect(await settlesSoon(fitToSize(png, 40, 30))).toBe(true);
    expect(await settlesSoon(encodeImage(png, { format: "png", compression: undefined }))).toBe(true);
    held.release();
  });
});

describe("loadSharp", () => {
  it("turns libvips's cache of operations off: every image is a client's own", async () => {
    const loaded = await loadSharp();
    const cache = loaded.cache();
    expect([cache.memory.max, cache.files.max, cache.items.max]).toEqual([0, 0, 0]);
  });
});
