import type { OverlayOptions } from "sharp";
import { loadSharp } from "../image-library.ts";
import type { EditInputs } from "../edit-inputs.ts";
import { PNG_OPTIONS, SANDBOX_EXIF, assertSandboxSize, renderSandboxPng, sandboxBand } from "./render.ts";

// The sandbox "edit": a pure function of the inputs, the prompt and the variant, so the
// edit path can be tried end to end without an upstream. The first image is fitted to the
// requested size (cover), then visibly changed:
//   - with a mask, its transparent area is filled with the prompt's sandbox picture and
//     every opaque pixel keeps the input's colour (an inpaint, as the mask asks);
//   - without one, the whole image is inverted (and hue-rotated for variants after the first).
// Further images appear as thumbnails along the top edge, and the sandbox's checker band
// and EXIF mark are added as on every sandbox image.

export async function editSandboxPng(inputs: EditInputs, prompt: string, width: number, height: number, variant: number): Promise<Buffer> {
  assertSandboxSize(width, height);
  const [first, ...others] = inputs.images;
  if (!first) throw new RangeError("an edit needs at least one image");
  const sharp = await loadSharp();
  let base = sharp(first).resize(width, height, { fit: "cover" }).removeAlpha();
  if (!inputs.mask) {
    base = base.negate();
    if (variant > 0) base = base.modulate({ hue: (variant * 60) % 360 });
  }
  // Composite runs after every other operation of a pipeline, so the changed base is made first.
  const { data, info } = await base.raw().toBuffer({ resolveWithObject: true });
  const layers: OverlayOptions[] = [];
  if (inputs.mask) layers.push({ input: await promptPatch(inputs.mask, prompt, width, height, variant), left: 0, top: 0 });
  layers.push(...(await thumbnails(others, width, height)));
  const band = bandLayer(width, height);
  if (band) layers.push(band);
  return sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    .composite(layers)
    .withExif(SANDBOX_EXIF)
    .png(PNG_OPTIONS)
    .toBuffer();
}

/** The prompt's sandbox picture, opaque where the mask is transparent and transparent elsewhere. */
async function promptPatch(mask: Buffer, prompt: string, width: number, height: number, variant: number): Promise<Buffer> {
  const seed = variant === 0 ? prompt : `${prompt}\u0000${variant}`;
  const picture = await renderSandboxPng(seed, width, height);
  const sharp = await loadSharp();
  const editArea = await sharp(mask).resize(width, height, { fit: "fill" }).ensureAlpha().extractChannel("alpha").negate().raw().toBuffer();
  // The picture is RGB already; removeAlpha here would run after the join and drop the new channel.
  return sharp(picture)
    .joinChannel(editArea, { raw: { width, height, channels: 1 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
}

/** The second and later images, each a fifth of the short side, left to right along the top while they fit. */
async function thumbnails(images: Buffer[], width: number, height: number): Promise<OverlayOptions[]> {
  const side = Math.floor(Math.min(width, height) / 5);
  if (side < 4) return [];
  const fitting = images.slice(0, Math.floor(width / side));
  const sharp = await loadSharp();
  return Promise.all(
    fitting.map(async (image, index) => ({
      input: await sharp(image).resize(side, side, { fit: "cover" }).removeAlpha().png({ compressionLevel: 0 }).toBuffer(),
      left: index * side,
      top: 0,
    })),
  );
}

/** The same yellow and black checker band as a generated sandbox image, along the bottom edge. */
function bandLayer(width: number, height: number): OverlayOptions | null {
  const band = sandboxBand(width, height);
  const rows = height - band.top;
  if (rows <= 0) return null;
  const pixels = Buffer.alloc(width * rows * 3);
  for (let y = 0; y < rows; y++) {
    for (let x = 0; x < width; x++) {
      const yellow = (Math.floor(x / band.cell) + Math.floor(y / band.cell)) % 2 === 0;
      pixels.set(yellow ? [250, 204, 21] : [20, 20, 20], (y * width + x) * 3);
    }
  }
  return { input: pixels, raw: { width, height: rows, channels: 3 }, left: 0, top: band.top };
}
