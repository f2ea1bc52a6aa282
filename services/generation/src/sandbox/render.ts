import { createHash } from "node:crypto";
import { loadSharp } from "../image-library.ts";

// The sandbox "model": a real PNG whose look is a pure function of the prompt,
// so the whole service can be tried end to end without any upstream.

export const MAX_SANDBOX_SIDE = 4096;

// The picture is drawn at no more than this many pixels on its longest side and
// then upscaled by libvips, which streams the resize into the PNG encoder: the
// JavaScript loop stays tiny and a 4096x4096 image never sits in memory raw.
const CANVAS_MAX_SIDE = 512;

// Adaptive filtering roughly halves the file for these smooth gradients; a
// moderate zlib level keeps the encode time short, where higher levels barely
// shrink the file further.
export const PNG_OPTIONS = { compressionLevel: 4, adaptiveFiltering: true } as const;

export const SANDBOX_EXIF = {
  IFD0: { Software: "Orvado sandbox", ImageDescription: "Orvado sandbox image (not produced by a real model)" },
};

type Rgb = readonly [number, number, number];

interface Circle {
  cx: number;
  cy: number;
  radius: number;
  colour: Rgb;
  opacity: number;
}

interface Design {
  palette: readonly [Rgb, Rgb, Rgb];
  gradientAngle: number;
  circles: Circle[];
  stripeAngle: number;
  stripePeriod: number;
  stripeOpacity: number;
}

export async function renderSandboxPng(prompt: string, width: number, height: number): Promise<Buffer> {
  assertSandboxSize(width, height);
  const scale = Math.min(1, CANVAS_MAX_SIDE / Math.max(width, height));
  const canvasWidth = Math.max(1, Math.round(width * scale));
  const canvasHeight = Math.max(1, Math.round(height * scale));
  const pixels = paint(designFor(prompt), canvasWidth, canvasHeight);
  const sharp = await loadSharp();

  let image = sharp(pixels, { raw: { width: canvasWidth, height: canvasHeight, channels: 3 } });
  if (canvasWidth !== width || canvasHeight !== height) {
    // Mitchell avoids the ringing Lanczos leaves around the checker band's hard edges.
    image = image.resize(width, height, { fit: "fill", kernel: "mitchell" });
  }
  return image.withExif(SANDBOX_EXIF).png(PNG_OPTIONS).toBuffer();
}

export function assertSandboxSize(width: number, height: number): void {
  assertSide("width", width);
  assertSide("height", height);
}

function assertSide(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1 || value > MAX_SANDBOX_SIDE) {
    throw new RangeError(`${name} must be an integer from 1 to ${MAX_SANDBOX_SIDE}, got ${value}`);
  }
}

function designFor(prompt: string): Design {
  const hash = createHash("sha256").update(prompt, "utf8").digest();
  const byte = (index: number): number => hash[index] ?? 0;
  const unit = (index: number): number => byte(index) / 255;

  // Three hues spread around the wheel so every palette has real contrast.
  const baseHue = ((byte(0) << 8) | byte(1)) % 360;
  const hues = [baseHue, baseHue + 90 + (byte(2) % 90), baseHue + 180 + (byte(3) % 60) - 30];
  const saturation = 0.55 + unit(4) * 0.35;
  const palette = hues.map((hue, i) => hslToRgb(hue, saturation, 0.3 + unit(5 + i) * 0.4)) as [Rgb, Rgb, Rgb];

  const circleCount = 3 + (byte(8) % 3);
  const circles: Circle[] = [];
  for (let i = 0; i < circleCount; i++) {
    const at = 9 + i * 3;
    circles.push({
      cx: unit(at),
      cy: unit(at + 1),
      radius: 0.06 + unit(at + 2) * 0.22,
      colour: palette[(i + 1) % 3] ?? palette[0],
      opacity: 0.55 + (byte(at + 2) % 4) * 0.1,
    });
  }

  return {
    palette,
    gradientAngle: unit(24) * 2 * Math.PI,
    circles,
    stripeAngle: unit(25) * Math.PI,
    stripePeriod: 0.04 + unit(26) * 0.08,
    stripeOpacity: 0.1 + unit(27) * 0.15,
  };
}

/** Draws the design into a raw RGB buffer; all geometry is relative to the shorter side so circles stay round. */
function paint(design: Design, width: number, height: number): Buffer {
  const pixels = Buffer.alloc(width * height * 3);
  const shortSide = Math.min(width, height);
  const dirX = Math.cos(design.gradientAngle);
  const dirY = Math.sin(design.gradientAngle);
  // Project the corners so the gradient spans the whole canvas whatever its angle.
  const reach = Math.abs(dirX) * width + Math.abs(dirY) * height || 1;
  const stripeNormalX = Math.cos(design.stripeAngle);
  const stripeNormalY = Math.sin(design.stripeAngle);
  const stripePeriodPx = Math.max(2, design.stripePeriod * shortSide);
  const band = sandboxBand(width, height);
  const colour: [number, number, number] = [0, 0, 0];

  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const px = x + 0.5;
      const py = y + 0.5;
      const t = ((px - width / 2) * dirX + (py - height / 2) * dirY) / reach + 0.5;
      gradient(design.palette, t, colour);

      const stripeOffset = (px * stripeNormalX + py * stripeNormalY) / stripePeriodPx;
      // Distance from the centre of the nearest stripe, in periods (stripes are half a period wide).
      const fromStripeCentre = Math.abs(stripeOffset - Math.floor(stripeOffset) - 0.5);
      const stripeCoverage = clamp01((0.25 - fromStripeCentre) * stripePeriodPx + 0.5);
      if (stripeCoverage > 0) blend(colour, [255, 255, 255], design.stripeOpacity * stripeCoverage);

      for (const circle of design.circles) {
        const distance = Math.hypot(px - circle.cx * width, py - circle.cy * height);
        // One pixel of soft edge keeps small, unresized images from looking jagged.
        const coverage = clamp01(circle.radius * shortSide - distance + 0.5);
        if (coverage > 0) blend(colour, circle.colour, circle.opacity * coverage);
      }

      if (y >= band.top) {
        const cell = (Math.floor(x / band.cell) + Math.floor((y - band.top) / band.cell)) % 2;
        colour[0] = cell === 0 ? 250 : 20;
        colour[1] = cell === 0 ? 204 : 20;
        colour[2] = cell === 0 ? 21 : 20;
      }

      const offset = (y * width + x) * 3;
      pixels[offset] = Math.round(colour[0]);
      pixels[offset + 1] = Math.round(colour[1]);
      pixels[offset + 2] = Math.round(colour[2]);
    }
  }
  return pixels;
}

/**
 * The sandbox mark: a yellow and black checker band along the bottom edge, the
 * same on every image so nobody mistakes a sandbox picture for model output.
 */
export function sandboxBand(width: number, height: number): { top: number; cell: number } {
  const shortSide = Math.min(width, height);
  // Images a few pixels tall get no band rather than a band that is the whole image.
  if (height < 16) return { top: height, cell: 1 };
  const bandHeight = Math.max(2, Math.round(shortSide * 0.06));
  return { top: height - bandHeight, cell: Math.max(1, Math.round(bandHeight / 2)) };
}

function gradient(palette: readonly [Rgb, Rgb, Rgb], t: number, out: [number, number, number]): void {
  const position = clamp01(t) * 2;
  const [from, to] = position < 1 ? [palette[0], palette[1]] : [palette[1], palette[2]];
  const mix = position < 1 ? position : position - 1;
  out[0] = from[0] + (to[0] - from[0]) * mix;
  out[1] = from[1] + (to[1] - from[1]) * mix;
  out[2] = from[2] + (to[2] - from[2]) * mix;
}

function blend(out: [number, number, number], over: Rgb, alpha: number): void {
  out[0] = out[0] * (1 - alpha) + over[0] * alpha;
  out[1] = out[1] * (1 - alpha) + over[1] * alpha;
  out[2] = out[2] * (1 - alpha) + over[2] * alpha;
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}

function hslToRgb(hue: number, saturation: number, lightness: number): Rgb {
  const h = (((hue % 360) + 360) % 360) / 60;
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const second = chroma * (1 - Math.abs((h % 2) - 1));
  const [r, g, b] =
    h < 1 ? [chroma, second, 0] :
    h < 2 ? [second, chroma, 0] :
    h < 3 ? [0, chroma, second] :
    h < 4 ? [0, second, chroma] :
    h < 5 ? [second, 0, chroma] :
    [chroma, 0, second];
  const lift = lightness - chroma / 2;
  return [(r + lift) * 255, (g + lift) * 255, (b + lift) * 255];
}
