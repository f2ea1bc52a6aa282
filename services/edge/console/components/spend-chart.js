// Daily spend as inline SVG bars: a y axis in dollars, a date every few days, a title on every bar.
import { html } from "../lib/html.js";
import { dayLabel, microsText, plural, usd } from "../lib/format.js";

const WIDTH = 720;
const HEIGHT = 220;
const PAD = { top: 12, right: 8, bottom: 28, left: 64 };

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
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const { max, ticks: tickCount } = yAxis(Math.max(0, ...days.map(valueFor)), floor);
  const slot = plotWidth / Math.max(days.length, 1);
  const barWidth = Math.max(2, slot * 0.68);
  const labelEvery = Math.max(1, Math.ceil(days.length / 8));
  const yFor = (micros) => PAD.top + plotHeight - (micros / max) * plotHeight;
  const ticks = Array.from({ length: tickCount + 1 }, (_, index) => (max * index) / tickCount);
  const total = days.reduce((sum, day) => sum + valueFor(day), 0);

  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label=${`${what} per day over ${plural(days.length, "day")}: ${format(total)} in total`}>
      ${ticks.map(
        (tick) => html`<g class="chart-grid">
          <line x1=${PAD.left} x2=${WIDTH - PAD.right} y1=${yFor(tick)} y2=${yFor(tick)} />
          <text x=${PAD.left - 8} y=${yFor(tick) + 4} text-anchor="end">${format(tick)}</text>
        </g>`,
      )}
      ${days.map((day, index) => {
        const micros = valueFor(day);
        const x = PAD.left + index * slot + (slot - barWidth) / 2;
        const height = Math.max(micros > 0 ? 2 : 0, (micros / max) * plotHeight);
        return html`<g class="chart-day">
          <title>${titleOf(day)}</title>
          <rect class="chart-hit" x=${PAD.left + index * slot} y=${PAD.top} width=${slot} height=${plotHeight} />
          <rect class="chart-bar" x=${x} y=${PAD.top + plotHeight - height} width=${barWidth} height=${height} rx="2" />
          ${index % labelEvery === 0 &&
          html`<text class="chart-label" x=${x + barWidth / 2} y=${HEIGHT - 8} text-anchor="middle">${dayLabel(day.date)}</text>`}
        </g>`;
      })}
      <line class="chart-axis" x1=${PAD.left} x2=${WIDTH - PAD.right} y1=${PAD.top + plotHeight} y2=${PAD.top + plotHeight} />
    </svg>
  </figure>`;
}
