import { pixelSize, type PixelSize, type Requested } from "../size-shapes.ts";

/** An OpenAI-compatible server is asked for exactly the requested size. */
export const exactSize = (requested: Requested): PixelSize => pixelSize(requested.width, requested.height);
