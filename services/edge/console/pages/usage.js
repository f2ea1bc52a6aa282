// Usage: every request with its cost, filtered by key, model, end user and dates, a page at a time, as CSV too.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { get, query } from "../lib/api.js";
import { Card, Empty, ErrorAlert, Field, Loading, PageHeader, useLoad } from "../components/ui.js";
import { RequestsTable } from "../components/requests-table.js";
import { RequestDetail } from "../components/request-detail.js";

const PAGE_SIZES = [10, 25, 50, 100];

/** The API's filters from the form's: days become the UTC instants that bound them in local time. */
export function usageFilters(form) {
  const filters = { keyId: form.keyId, model: form.model, user: form.user.trim() };
  if (form.from) filters.from = new Date(`${form.from}T00:00:00`).toISOString();
  if (form.to) {
    // The API's upper bound is exclusive: the next local midnight takes in the whole "to" day.
    const end = new Date(`${form.to}T00:00:00`);
    end.setDate(end.getDate() + 1);
    filters.to = end.toISOString();
  }
  return filters;
}

function Filters({ form, onChange }) {
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").KeysAnswer>} */
  const keys = useLoad(() => get("/keys"));
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").ModelsAnswer>} */
  const models = useLoad(() => get("/models"));
  const set = (name) => (event) => onChange({ ...form, [name]: event.target.value });
  const filtered = form.keyId || form.model || form.user || form.from || form.to;
  return html`<form class="filters" onSubmit=${(event) => event.preventDefault()}>
    <${Field} label="Key">
      <select name="keyId" value=${form.keyId} onChange=${set("keyId")}>
        <option value="">All keys</option>
        <option value="console">Playground</option>
        ${keys.data?.keys.map((key) => html`<option value=${key.id}>${key.name} (${key.prefix}…)</option>`)}
      </select>
    <//>
    <${Field} label="Model">
      <select name="model" value=${form.model} onChange=${set("model")}>
        <option value="">All models</option>
        ${models.data?.models.map((model) => html`<option value=${model.id}>${model.id}</option>`)}
      </select>
    <//>
    <${Field} label="User">
      <input type="search" name="user" maxlength="256" placeholder="end-user id" value=${form.user} onChange=${set("user")} />
    <//>
    <${Field} label="From">
      <input type="date" name="from" value=${form.from} max=${form.to || undefined} onChange=${set("from")} />
    <//>
    <${Field} label="To">
      <input type="date" name="to" value=${form.to} min=${form.from || undefined} onChange=${set("to")} />
    <//>
    ${filtered && html`<button type="button" class="button link" onClick=${() => onChange(EMPTY_FORM)}>Clear filters</button>`}
  </form>`;
}

const EMPTY_FORM = { keyId: "", model: "", user: "", from: "", to: "" };

export function Usage() {
  const [form, setForm] = useState(EMPTY_FORM);
  // Cursors of the pages before this one, so "Previous" can go back.
  const [cursors, setCursors] = useState(/** @type {(string | null)[]} */ ([]));
  const [cursor, setCursor] = useState(/** @type {string | null} */ (null));
  const [pageSize, setPageSize] = useState(25);
  const [selected, setSelected] = useState(null);
  const filters = usageFilters(form);
  /** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").UsagePage>} */
  const page = useLoad(() => get("/usage" + query({ ...filters, limit: pageSize, cursor })), [JSON.stringify(filters), pageSize, cursor]);

  const firstPage = () => {
    setCursors([]);
    setCursor(null);
  };
  const changeFilters = (next) => {
    setForm(next);
    firstPage();
  };
  const changePageSize = (event) => {
    setPageSize(Number(event.target.value));
    firstPage();
  };
  const next = () => {
    setCursors([...cursors, cursor]);
    setCursor(page.data?.nextCursor ?? null);
  };
  const previous = () => {
    setCursor(cursors[cursors.length - 1]);
    setCursors(cursors.slice(0, -1));
  };
  const csv = "/console/api/usage.csv" + query(filters);

  return html`<${PageHeader} title="Usage" subtitle="Every generation request and what it cost, newest first.">
      <a class="button" href=${csv} download>Export CSV</a>
    <//>
    <${Card}><${Filters} form=${form} onChange=${changeFilters} /><//>
    <div class=${selected ? "split" : ""}>
      <${Card} class="usage-card">
        <${ErrorAlert} error=${page.error} />
        ${!page.data && !page.error && html`<${Loading} />`}
        ${page.data && page.data.requests.length === 0 && html`<${Empty} title="No requests match">Change the filters, or make a request with one of your keys.<//>`}
        ${page.data &&
        page.data.requests.length > 0 &&
        html`<${RequestsTable}
          requests=${page.data.requests}
          selectedId=${selected}
          compact=${selected !== null}
          onSelect=${(row) => setSelected(row.requestId)}
        />`}
        <div class="pager">
          <span class="muted small" data-testid="page-number">${page.loading && page.data ? "Loading…" : `Page ${cursors.length + 1}`}</span>
          <div class="pager-buttons">
            <label class="page-size muted small">
              Rows per page
              <select name="pageSize" value=${pageSize} onChange=${changePageSize}>
                ${PAGE_SIZES.map((size) => html`<option value=${size}>${size}</option>`)}
              </select>
            </label>
            <button type="button" class="button small" disabled=${cursors.length === 0 || page.loading} onClick=${previous}>← Previous</button>
            <button type="button" class="button small" disabled=${!page.data?.nextCursor || page.loading} onClick=${next}>Next →</button>
          </div>
        </div>
      <//>
      ${selected && html`<${RequestDetail} requestId=${selected} apiPath=${`/usage/${encodeURIComponent(selected)}`} onClose=${() => setSelected(null)} />`}
    </div>`;
}
