import type Sharp from "sharp";

// sharp (libvips) is loaded on its first use, not at start: a generation process
// whose channels answer PNGs of the size asked for (the common case, providers/fit.ts)
// and whose clients ask for PNG never needs it, and loading it adds about 20 MB of RSS
// (libvips and its libraries) to the process (docs/performance.md#where-the-memory-goes).
// The first image that needs it waits for the load once (tens of milliseconds).

let loading: Promise<typeof Sharp> | undefined;

/** The sharp module, loaded once. */
export function loadSharp(): Promise<typeof Sharp> {
  loading ??= import("sharp").then((module) => module.default);
  return loading;
}
