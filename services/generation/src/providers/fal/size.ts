import { boundedSize, type Requested } from "../size-shapes.ts";

/** fal FLUX endpoints take {width, height}; multiples of 16 up to 2048 px a side keep every model happy. */
export const falSize = (requested: Requested) => boundedSize(requested, { multiple: 16, minSide: 256, maxSide: 2048 });
