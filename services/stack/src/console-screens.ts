import { existsSync, mkdirSync } from "node:fs";
import { expect } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";

// What the console's page-by-page browser tests share: Debian's Chromium, where the screenshots
// go, and the measurements that say whether a user would see a page as broken (text too small,
// a choice cut short, a column off the screen, a page that scrolls sideways).

/** Debian's package; CONSOLE_TEST_CHROMIUM may point elsewhere. */
const CHROMIUM = process.env.CONSOLE_TEST_CHROMIUM ?? "/usr/bin/chromium";

/**
 * Where every page's screenshots are kept, at each width (test-output/ is git-ignored). A reviewer
 * opens them there after a run; the path is printed when a suite starts.
 */
export const SCREENSHOT_DIR = new URL("../../../test-output/screenshots/console/", import.meta.url).pathname;

/** The widths every page is looked at: a common laptop and a phone. */
export const WIDTHS = [1366, 390] as const;

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM}: install Debian's package (apt-get install -y chromium)`);
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  console.log(`console screenshots: ${SCREENSHOT_DIR}`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
}

/** A full-page picture named after the page and the width, the pointer parked where it highlights nothing. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const path = `${SCREENSHOT_DIR}${name}-${page.viewportSize()?.width ?? 0}.png`;
  await page.mouse.move(1, 1);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The page itself never scrolls sideways: wide tables scroll inside their own box. */
export async function noSidewaysPage(page: Page) {
  const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
  const culprits = await page.evaluate<string[]>(`[...document.querySelectorAll("body *")]
    .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1 && !element.closest(".table-wrap"))
    .filter((element) => !(element.parentElement && element.parentElement.getBoundingClientRect().right > window.innerWidth + 1))
    .map((element) => element.tagName + "." + element.className + " " + Math.round(element.getBoundingClientRect().right))`);
  expect(overflow, culprits.join(", ")).toBeLessThanOrEqual(0);
}

/**
 * The size each chart text is drawn at on screen, in CSS pixels: its computed font size times the
 * SVG's scale (its shown width over its viewBox width), so a drawing shrunk into a half-width card counts.
 */
export function chartTextSizes(page: Page): Promise<{ text: string; px: number }[]> {
  return page.evaluate(`[...document.querySelectorAll(".chart svg text")].map((text) => {
    const svg = text.ownerSVGElement;
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    return { text: text.textContent, px: parseFloat(getComputedStyle(text).fontSize) * scale };
  })`);
}

/** Whether a select is wide enough for its longest option's text (measured in the select's own font). */
export function selectFitsOptions(page: Page, selector: string): Promise<{ fits: boolean; longest: string; needed: number; width: number }> {
  return page.evaluate(`(() => {
    const select = document.querySelector(${JSON.stringify(selector)});
    const style = getComputedStyle(select);
    const context = document.createElement("canvas").getContext("2d");
    context.font = style.font;
    const texts = [...select.options].map((option) => option.text);
    const widths = texts.map((text) => context.measureText(text).width);
    const widest = Math.max(...widths);
    // The text box: the select's inner width less its padding and the room its arrow takes.
    const ARROW = 20;
    const width = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - ARROW;
    return { fits: widest <= width, longest: texts[widths.indexOf(widest)], needed: Math.ceil(widest), width: Math.floor(width) };
  })()`);
}

/** The part of each matched element outside the window's width, in px (0: fully visible without scrolling). */
export function outsideViewport(page: Page, selector: string): Promise<{ text: string; outside: number }[]> {
  return page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((element) => {
    const box = element.getBoundingClientRect();
    return { text: element.textContent.trim(), outside: Math.max(0, box.right - window.innerWidth, -box.left) };
  })`);
}

/** How many lines an element's text takes (a model id must not wrap). */
export function lineCount(page: Page, selector: string): Promise<number[]> {
  return page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
  })`);
}
