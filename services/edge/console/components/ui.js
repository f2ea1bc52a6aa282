// Small building blocks every page uses: cards, headers, alerts, badges, fields, dialogs, loading.
import { useCallback, useEffect, useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";

/**
 * Loads data once (and again on reload() or when deps change); keeps the last good data while
 * reloading. `loading` stays true until the data answers the current deps, so a page never shows
 * old data under a new heading.
 * @template T
 * @param {() => Promise<T>} load
 * @param {unknown[]} [deps]
 * @returns {import("../lib/answers.js").Loaded<T>}
 */
export function useLoad(load, deps = []) {
  const depsKey = JSON.stringify(deps);
  /** @type {{ data: T | null, error: any, loading: boolean, key: string | undefined }} */
  const initial = { data: null, error: null, loading: true, key: undefined };
  const [state, setState] = useState(initial);
  const generation = useRef(0);
  const reload = useCallback(() => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, error: null, loading: false, key: depsKey }),
      (error) => mine === generation.current && setState((previous) => ({ ...previous, error, loading: false, key: depsKey })),
    );
  }, [depsKey]);
  useEffect(reload, [reload]);
  return { data: state.data, error: state.error, loading: state.loading || state.key !== depsKey, reload };
}

export function PageHeader({ title, subtitle, children }) {
  return html`<header class="page-header">
    <div>
      <h1>${title}</h1>
      ${subtitle && html`<p class="muted">${subtitle}</p>`}
    </div>
    ${children && html`<div class="page-actions">${children}</div>`}
  </header>`;
}

export function Card({ title, subtitle, actions, children, class: extra = "", ...rest }) {
  return html`<section class=${"card " + extra} ...${rest}>
    ${(title || actions) &&
    html`<div class="card-header">
      <div>
        ${title && html`<h2>${title}</h2>`}
        ${subtitle && html`<p class="muted small">${subtitle}</p>`}
      </div>
      ${actions && html`<div class="card-actions">${actions}</div>`}
    </div>`}
    ${children}
  </section>`;
}

export function Alert({ kind = "error", children }) {
  if (!children) return null;
  return html`<div class=${"alert alert-" + kind} role=${kind === "error" ? "alert" : "status"}>${children}</div>`;
}

/** An API error as a sentence, or nothing. */
export function ErrorAlert({ error }) {
  if (!error) return null;
  return html`<${Alert} kind="error">${error.message}<//>`;
}

export function Badge({ kind = "neutral", children }) {
  return html`<span class=${"badge badge-" + kind}>${children}</span>`;
}

export function Spinner({ label = "Loading" }) {
  return html`<span class="spinner" role="status" aria-label=${label}></span>`;
}

export function Loading({ children = "Loading…" }) {
  return html`<div class="loading"><${Spinner} /> ${children}</div>`;
}

export function Empty({ title, children }) {
  return html`<div class="empty">
    <p class="empty-title">${title}</p>
    ${children && html`<p class="muted">${children}</p>`}
  </div>`;
}

export function Field({ label, hint, error, children, class: extra = "" }) {
  return html`<label class=${"field " + extra}>
    <span class="field-label">${label}</span>
    ${children}
    ${hint && !error && html`<span class="field-hint">${hint}</span>`}
    ${error && html`<span class="field-error">${error}</span>`}
  </label>`;
}

/** A modal dialog; Escape and the backdrop close it. */
export function Modal({ title, onClose, children, footer }) {
  /** @type {import("../vendor/preact.mjs").RefObject<HTMLDivElement>} */
  const panel = useRef(null);
  useEffect(() => {
    const onKey = (event) => event.key === "Escape" && onClose();
    document.addEventListener("keydown", onKey);
    panel.current?.querySelector(/** @type {"input"} */ ("input, textarea, select, button.primary, button"))?.focus();
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  return html`<div class="modal-backdrop" onClick=${(event) => event.target === event.currentTarget && onClose()}>
    <div class="modal" role="dialog" aria-modal="true" aria-label=${title} ref=${panel}>
      <h2 class="modal-title">${title}</h2>
      <div class="modal-body">${children}</div>
      ${footer && html`<div class="modal-footer">${footer}</div>`}
    </div>
  </div>`;
}

/** Asks before something that cannot be undone; shows the error if the action fails. */
export function ConfirmDialog({ title, children, confirmLabel, danger = true, onConfirm, onClose }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {any} */ (null));
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      onClose();
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return html`<${Modal}
    title=${title}
    onClose=${onClose}
    footer=${html`
      <button type="button" class="button" onClick=${onClose} disabled=${busy}>Cancel</button>
      <button type="button" class=${"button " + (danger ? "danger" : "primary")} onClick=${confirm} disabled=${busy}>
        ${busy ? "Working…" : confirmLabel}
      </button>`}
  >
    ${children}
    <${ErrorAlert} error=${error} />
  <//>`;
}

/** Key/value rows for a record. */
export function DetailList({ rows }) {
  return html`<dl class="detail-list">
    ${rows.map(([label, value]) => html`<div class="detail-row"><dt>${label}</dt><dd>${value}</dd></div>`)}
  </dl>`;
}
