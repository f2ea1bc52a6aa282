import type Sharp from "sharp";
import { availableParallelism } from "node:os";
import { loadedOnFirstUse } from "@orvado/core";
import { CallGate } from "./call-gate.ts";

// sharp (libvips) is loaded on its first use, not at start: a generation process
// whose channels answer PNGs of the size asked for (the common case, providers/fit.ts)
// and whose clients ask for PNG never needs it, and loading it adds RSS (libvips and
// its libraries) to the process (docs/performance.md#where-the-memory-goes).
// The first image that needs it waits for the load once (tens of milliseconds).

// Each image is the client's own, so libvips's cache of operations (by default up to 50 MB
// and 100 operations kept for a repeat of the same operation on the same input) never
// serves a hit here; it is turned off. libvips's threads per image stay at its default
// (one per core): one per image made no difference to memory or throughput
// (docs/design-choices.md#image-work).

/** The sharp module, loaded once. */
export const loadSharp: () => Promise<typeof Sharp> = loadedOnFirstUse(() =>
  import("sharp").then((module) => {
    module.default.cache(false);
    return module.default;
  }),
);

// Decoding a photo-sized image takes its whole pixel buffer (64 MB at 4096x4096) and
// the encoders more, and on a machine's cores only so many run at once anyway: more
// images at once only hold more memory while they wait for a core. So one image per
// core (docs/design-choices.md#image-work).
/** How many whole images this process decodes and encodes at once. */
export const IMAGE_WORK_AT_ONCE = availableParallelism();
const imageWorkGate = new CallGate(IMAGE_WORK_AT_ONCE);

/** Runs `work`, which decodes or encodes whole images with sharp, once one of the process's places for it is free. */
export async function withImageWork<T>(work: (sharp: typeof Sharp) => Promise<T>): Promise<T> {
  const sharp = await loadSharp();
  return imageWorkGate.run(() => work(sharp));
}
