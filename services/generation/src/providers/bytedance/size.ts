import { boundedSize, type Requested } from "../size-shapes.ts";

/** ByteDance Seedream 4: any WxH whose area is from 1280×720 to 4096×4096 pixels. */
export const byteDanceSize = (requested: Requested) =>
  boundedSize(requested, { multiple: 8, minSide: 256, maxSide: 4096, minPixels: 1280 * 720, maxPixels: 4096 * 4096 });
