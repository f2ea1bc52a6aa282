// Playground: try a model from the browser, billed to the account like any request (key "console").
import { useEffect, useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get } from "../lib/api.js";
import { imageSource } from "../lib/events.js";
import { microsText, textMicros, tierOf, usd } from "../lib/format.js";
import { Alert, Card, Empty, Field, Loading, PageHeader, Spinner, useLoad } from "../components/ui.js";
import { StatusBadge } from "../components/requests-table.js";
import { LiveProgress, useLiveJob } from "../components/live-job.js";

const PRESETS = [
  { value: "1024x1024", label: "1024 × 1024 · square" },
  { value: "1536x1024", label: "1536 × 1024 · landscape 3:2" },
  { value: "1024x1536", label: "1024 × 1536 · portrait 2:3" },
  { value: "1600x900", label: "1600 × 900 · wide 16:9" },
  { value: "2048x2048", label: "2048 × 2048 · square" },
  { value: "2560x1440", label: "2560 × 1440 · wide 16:9" },
  { value: "4096x4096", label: "4096 × 4096 · square" },
  { value: "auto", label: "auto" },
];
const QUALITIES = ["low", "medium", "high", "xhigh", "max", "auto"];
const OUTPUT_FORMATS = ["png", "jpeg", "webp"];
const CUSTOM = "custom";

/** The request's cost record, asked again while billing has not settled it yet. */
function useSettledCost(requestId, initial) {
  const [cost, setCost] = useState(initial);
  const attempts = useRef(0);
  useEffect(() => {
    if ((cost && cost.status !== "pending") || ++attempts.current > 90) return;
    const timer = setTimeout(() => get(`/usage/${encodeURIComponent(requestId)}`).then(setCost, () => null), 700);
    return () => clearTimeout(timer);
  }, [cost]);
  return cost ?? { status: "pending" };
}

function Result({ result }) {
  const cost = useSettledCost(result.requestId, result.cost);
  return html`<${Card} title="Result" data-testid="playground-result">
    <div class="result-meta">
      <div><span class="muted small">Cost</span><div class="stat-value" data-testid="playground-cost">${cost.status === "pending" ? "settling…" : usd(cost.amountUsd)}</div></div>
      <div><span class="muted small">Status</span><div><${StatusBadge} status=${cost.status} /></div></div>
      <div><span class="muted small">Tier</span><div>${cost.tier ?? "—"}</div></div>
      <div class="grow"><span class="muted small">Request id</span><div><code data-testid="playground-request-id">${result.requestId}</code></div></div>
    </div>
    <div class="image-grid">
      ${result.data.map((image, index) => {
        const src = image.url ?? imageSource(image);
        return html`<figure class="image-tile">
          <a href=${src} target="_blank" rel="noopener"><img src=${src} alt=${`Generated image ${index + 1}`} /></a>
          <figcaption class="muted small">Image ${index + 1}${image.url ? html` · <a href=${image.url} target="_blank" rel="noopener">open</a> (temporary link)` : ""}</figcaption>
        </figure>`;
      })}
    </div>
  <//>`;
}

function sizeFrom(form) {
  return form.preset === CUSTOM ? `${form.width}x${form.height}` : form.preset;
}

/**
 * Whether the model has a price tier for the size (tierOf gives null for a size outside every tier).
 * @param {{ tiers: readonly string[] }} model
 * @param {string | null} tier
 */
const offersTier = (model, tier) => tier !== null && model.tiers.includes(tier);

export function Playground() {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").ModelsAnswer>} */
  const models = useLoad(() => get("/models"));
  const [form, setForm] = useState({ prompt: "", model: "", preset: "1024x1024", width: "1280", height: "720", quality: "", format: "png", n: 1 });
  // The job: streamed, with its progress and previews while it runs (components/live-job.js).
  const { job, seconds: elapsed, start } = useLiveJob();
  const { running: busy, error, result } = job;

  const list = models.data?.models ?? [];
  const model = list.find((entry) => entry.id === form.model) ?? list[0];
  const size = sizeFrom(form);
  const tier = tierOf(size);
  const offered = model && tier && offersTier(model, tier);
  const price = offered ? model.prices?.[tier] : null;
  const isAlpha = model?.family === "alpha";
  const set = (name) => (event) => setForm({ ...form, [name]: event.target.value });
  // A preset size the new model has no tier for goes back to 1024x1024 (every model has 1K).
  const chooseModel = (event) => {
    const next = list.find((entry) => entry.id === event.target.value);
    const keeps = form.preset === CUSTOM || (next && offersTier(next, tierOf(form.preset)));
    setForm({ ...form, model: event.target.value, preset: keeps ? form.preset : "1024x1024" });
  };

  const submit = (event) => {
    event.preventDefault();
    const body = { model: model.id, prompt: form.prompt, size, n: Number(form.n) };
    if (isAlpha && form.quality) body.quality = form.quality;
    if (form.format !== "png") body.output_format = form.format;
    start(body);
  };

  if (models.error) return html`<${PageHeader} title="Playground" /><${Alert}>${models.error.message}<//>`;
  if (!models.data) return html`<${PageHeader} title="Playground" /><${Loading} />`;

  return html`<${PageHeader} title="Playground" subtitle="Generate from the browser. Requests are charged to your balance like any other." />
    <div class="playground">
      <${Card} title="Request">
        <form class="form" onSubmit=${submit}>
          <${Field} label="Prompt">
            <textarea name="prompt" rows="4" required placeholder="A lighthouse on a cliff at dawn, watercolor" value=${form.prompt} onInput=${set("prompt")}></textarea>
          <//>
          <div class="form-grid">
            <${Field} label="Model" class="field-wide" hint=${model?.sandbox ? "Sandbox: draws test images on this server, charged like any model" : null}>
              <select name="model" value=${model?.id} onChange=${chooseModel}>
                ${list.map((entry) => html`<option value=${entry.id}>${entry.id}${entry.sandbox ? " · sandbox" : ""}</option>`)}
              </select>
            <//>
            <${Field} label="Size">
              <select name="size" value=${form.preset} onChange=${set("preset")}>
                ${PRESETS.map((preset) => {
                  // A size whose tier the model does not offer cannot be chosen for it.
                  const missing = model && !offersTier(model, tierOf(preset.value));
                  return html`<option value=${preset.value} disabled=${missing}>${preset.label}${missing ? ` · no ${tierOf(preset.value)} tier` : ""}</option>`;
                })}
                <option value=${CUSTOM}>Custom…</option>
              </select>
            <//>
            ${form.preset === CUSTOM &&
            html`<div class="field size-custom">
              <span class="field-label">Width × height (px)</span>
              <div class="inline-inputs">
                <input type="number" name="width" min="64" max="8192" aria-label="Width" value=${form.width} onInput=${set("width")} />
                <span>×</span>
                <input type="number" name="height" min="64" max="8192" aria-label="Height" value=${form.height} onInput=${set("height")} />
              </div>
            </div>`}
            <${Field} label="Quality" hint=${isAlpha ? "Does not change the price" : "Only the alpha models take a quality"}>
              <select name="quality" value=${isAlpha ? form.quality : ""} disabled=${!isAlpha} onChange=${set("quality")}>
                <option value="">Default</option>
                ${QUALITIES.map((quality) => html`<option value=${quality}>${quality}</option>`)}
              </select>
            <//>
            <${Field} label="Format" hint="Converted from what the model returns">
              <select name="output_format" value=${form.format} onChange=${set("format")}>
                ${OUTPUT_FORMATS.map((format) => html`<option value=${format}>${format.toUpperCase()}</option>`)}
              </select>
            <//>
            <${Field} label="Images (n)" hint="1 is advised; run requests in parallel for more">
              <input type="number" name="n" min="1" max="4" value=${form.n} onInput=${set("n")} />
            <//>
          </div>
          <div class="estimate">
            ${tier === null && html`<span class="field-error">Give the size as width×height, for example 1280x720.</span>`}
            ${tier && !offered && html`<span class="field-error">${model.id} does not offer the ${tier} tier (it offers ${model.tiers.join(", ")}).</span>`}
            ${offered &&
            html`<span>Tier <strong>${tier}</strong> · ${usd(price)} per image · estimated <strong>${usd(microsText(textMicros(price) * BigInt(Number(form.n) || 1)))}</strong></span>`}
          </div>
          <div class="form-actions">
            <button type="submit" class="button primary" disabled=${busy || !form.prompt.trim() || !offered}>
              ${busy ? html`<${Spinner} label="Generating" /> Generating… ${elapsed}s` : "Generate"}
            </button>
          </div>
        </form>
      <//>
      <div class="playground-output">
        ${error &&
        html`<${Alert}>
          <strong>The request failed${error.status ? ` (${error.status} ${error.code})` : error.code ? ` (${error.code})` : ""}.</strong> ${error.message}
          <div class="small muted">Failed and refused requests are not charged.</div>
        <//>`}
        ${result && html`<${Result} result=${result} />`}
        ${!result && !error && html`<${Card}>
          ${busy ? html`<${LiveProgress} job=${job} seconds=${elapsed} />` : html`<${Empty} title="Your images appear here">Write a prompt and press Generate.<//>`}
        <//>`}
      </div>
    </div>`;
}
