import { afterEach, describe, expect, it } from "vitest";
import sharp from "sharp";
import { DEFAULT_IMAGE_WORK_AT_ONCE, loadSharp, setImageWorkAtOnce, withImageWork } from "./image-library.ts";
import { encodeImage } from "./output-format.ts";
import { fitToSize } from "./providers/fit.ts";

// In process, no transport: the places for whole-image work and sharp's settings.

afterEach(() => setImageWorkAtOnce(DEFAULT_IMAGE_WORK_AT_ONCE));

/** A place taken until release() is called: what another image's work looks like from outside. */
function heldPlace() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const started = new Promise<void>((resolve) => void withImageWork(() => (resolve(), released)));
  return { started, release };
}

/** Whether the promise settled within a few turns of the event loop and a short wait. */
async function settlesSoon(promise: Promise<unknown>, ms = 300): Promise<boolean> {
  return Promise.race([promise.then(() => true, () => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

describe("withImageWork", () => {
  it("runs at most the set number of works at once, the rest in order as places free", async () => {
    setImageWorkAtOnce(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const works = Array.from({ length: 6 }, (_, index) =>
      withImageWork(async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        order.push(index);
        running -= 1;
      }),
    );
    await Promise.all(works);
    expect(most).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("gives the place back when the work fails", async () => {
    setImageWorkAtOnce(1);
    await expect(withImageWork(async () => Promise.reject(new Error("bad image")))).rejects.toThrow("bad image");
    expect(await settlesSoon(withImageWork(async () => "next"))).toBe(true);
  });

  it("is what encodeImage and fitToSize wait for when every place is taken", async () => {
    setImageWorkAtOnce(1);
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#336699" } }).png().toBuffer();
    const held = heldPlace();
    await held.started;
    const webp = encodeImage(png, { format: "webp", compression: undefined });
    const resized = fitToSize(png, 20, 15);
    expect(await settlesSoon(webp)).toBe(false);
    expect(await settlesSoon(resized)).toBe(false);
    held.release();
    expect((await webp).contentType).toBe("image/webp");
    expect((await resized).resized).toBe(true);
  });

  it("does not hold back a PNG of the asked size, which is never decoded", async () => {
    setImageWorkAtOnce(1);
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#336699" } }).png().toBuffer();
    const held = heldPlace();
    await held.started;
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
