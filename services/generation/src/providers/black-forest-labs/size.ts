import { boundedSize, type Requested } from "../size-shapes.ts";

/** Black Forest Labs FLUX: width and height multiples of 32, from 256 to 1440 px. */
export const blackForestLabsSize = (requested: Requested) => boundedSize(requested, { multiple: 32, minSide: 256, maxSide: 1440 });
