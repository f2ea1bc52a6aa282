// Daily bars as inline SVG: a y axis, a date under every few bars and always under the last
// (today), a title on every bar. The drawing is made at the width it is shown at (measured), so
// its text keeps its real size in a half-width card or on a phone instead of shrinking with a viewBox.
import { useLayoutEffect, useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { dayLabel, microsText, plural, usd } from "../lib/format.js";

/** The width drawn before the first measurement (and where nothing can be measured). */
const DEFAULT_WIDTH = 720;
const HEIGHT = 220;
const PAD = { top: 12, right: 8, bottom: 28, left: 64 };
/** Room one date label needs, its neighbour's gap included ("Nov 30" at the chart's 12 px). */
const LABEL_ROOM = 60;
/** Half a date label, for keeping the last one inside the drawing. */
const HALF_LABEL = 22;

/** The element's width in CSS pixels, followed as it changes. */
function useWidth() {
  /** @type {import("../vendor/preact.mjs").RefObject<HTMLElement>} */
  const ref = useRef(null);
  const [width, setWidth] = useState(DEFAULT_WIDTH);
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => element.clientWidth > 0 && setWidth(Math.round(element.clientWidth));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return { ref, width };
}

/**
 * Which bars get a date: counted back from the last, so today is always labelled, every `every`
 * bars, as many as the width has room for.
 * @param {number} count bars
 * @param {number} plotWidth px
 */
export function labelledBars(count, plotWidth) {
  const fit = Math.max(1, Math.floor(plotWidth / LABEL_ROOM));
  const every = Math.max(1, Math.ceil(count / fit));
  return (index) => (count - 1 - index) % every === 0;
}

/**
 * The y axis: the smallest 1, 2 or 5 × 10^k micro-dollar ceiling at or above the tallest bar (at
 * least one cent), split into ticks that land on round amounts (a fifth of 1 or 5, a quarter of 2).
 */
export function yAxis(tallestMicros, floor = 10_000) {
  const target = Math.max(tallestMicros, floor);
  const magnitude = 10 ** Math.floor(Math.log10(target));
  const step = [1, 2, 5, 10].find((candidate) => candidate * magnitude >= target);
  // 10 × magnitude always reaches the target, so find() never comes back empty.
  const chosen = step ?? 10;
  return { max: chosen * magnitude, ticks: chosen === 2 ? 4 : 5 };
}

const dollars = (micros) => usd(microsText(Math.round(micros)));

const dayTitle = (day) => `${dayLabel(day.date)}: ${usd(day.usd)} · ${plural(day.requests, "charged request")}`;

/** Requests per day: whole numbers on the axis, the outcome in each bar's title. */
export function RequestsChart({ days }) {
  return html`<${SpendChart}
    days=${days}
    valueFor=${(day) => day.requests}
    format=${(value) => String(Math.round(value))}
    floor=${5}
    what="Requests"
    titleOf=${(day) => `${dayLabel(day.date)}: ${plural(day.requests, "request")}, ${day.charged} charged, ${day.notCharged} not charged`}
  />`;
}

/** Bars per day; money (micro-USD in day.micros) unless valueFor and format say otherwise. */
export function SpendChart({ days, valueFor = (day) => Number(day.micros), format = dollars, floor = 10_000, what = "Spend", titleOf = dayTitle }) {
  const { ref, width } = useWidth();
  const plotWidth = Math.max(1, width - PAD.left - PAD.right);
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const { max, ticks: tickCount } = yAxis(Math.max(0, ...days.map(valueFor)), floor);
  const slot = plotWidth / Math.max(days.length, 1);
  const barWidth = Math.max(2, slot * 0.68);
  const labelled = labelledBars(days.length, plotWidth);
  const yFor = (micros) => PAD.top + plotHeight - (micros / max) * plotHeight;
  const ticks = Array.from({ length: tickCount + 1 }, (_, index) => (max * index) / tickCount);
  const total = days.reduce((sum, day) => sum + valueFor(day), 0);
  // A label centred under the last bar would stick out of the drawing on the right: it ends there instead.
  const labelAt = (center) => (center + HALF_LABEL > width ? { x: width - 1, anchor: "end" } : { x: center, anchor: "middle" });

  return html`<figure class="chart" ref=${ref}>
    <svg width=${width} height=${HEIGHT} viewBox=${`0 0 ${width} ${HEIGHT}`} role="img" aria-label=${`${what} per day over ${plural(days.length, "day")}: ${format(total)} in total`}>
      ${ticks.map(
        (tick) => html`<g class="chart-grid">
          <line x1=${PAD.left} x2=${width - PAD.right} y1=${yFor(tick)} y2=${yFor(tick)} />
          <text x=${PAD.left - 8} y=${yFor(tick) + 4} text-anchor="end">${format(tick)}</text>
        </g>`,
      )}
      ${days.map((day, index) => {
        const micros = valueFor(day);
        const x = PAD.left + index * slot + (slot - barWidth) / 2;
        const height = Math.max(micros > 0 ? 2 : 0, (micros / max) * plotHeight);
        const label = labelled(index) && labelAt(x + barWidth / 2);
        return html`<g class="chart-day" data-date=${day.date}>
          <title>${titleOf(day)}</title>
          <rect class="chart-hit" x=${PAD.left + index * slot} y=${PAD.top} width=${slot} height=${plotHeight} />
          <rect class="chart-bar" x=${x} y=${PAD.top + plotHeight - height} width=${barWidth} height=${height} rx="2" />
          ${label && html`<text class="chart-label" x=${label.x} y=${HEIGHT - 8} text-anchor=${label.anchor}>${dayLabel(day.date)}</text>`}
        </g>`;
      })}
      <line class="chart-axis" x1=${PAD.left} x2=${width - PAD.right} y1=${PAD.top + plotHeight} y2=${PAD.top + plotHeight} />
    </svg>
  </figure>`;
}
