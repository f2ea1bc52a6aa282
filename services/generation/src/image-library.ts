import type Sharp from "sharp";
import { loadedOnFirstUse } from "@orvado/core";

// sharp (libvips) is loaded on its first use, not at start: a generation process
// whose channels answer PNGs of the size asked for (the common case, providers/fit.ts)
// and whose clients ask for PNG never needs it, and loading it adds about 20 MB of RSS
// (libvips and its libraries) to the process (docs/performance.md#where-the-memory-goes).
// The first image that needs it waits for the load once (tens of milliseconds).

/** The sharp module, loaded once. */
export const loadSharp: () => Promise<typeof Sharp> = loadedOnFirstUse(() => import("sharp").then((module) => module.default));
