// Pages live under /console/<page>; the server answers every such path with index.html.
import { useEffect, useState } from "../vendor/hooks.mjs";

const BASE = "/console";
const listeners = new Set();

export function currentPath() {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "/";
  return path.replace(/\/+$/, "") || "/";
}

export function navigate(path, { replace = false } = {}) {
  const url = BASE + (path === "/" ? "" : path);
  if (url === location.pathname + location.search) return;
  history[replace ? "replaceState" : "pushState"](null, "", url);
  for (const listener of listeners) listener();
  window.scrollTo(0, 0);
}

export function usePath() {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return path;
}

/** Plain <a href="/console/…"> links move between pages without reloading. */
export function interceptLinks() {
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    // The target may be a text node or the document, which have no closest().
    const link = /** @type {HTMLAnchorElement | null} */ (event.target instanceof Element ? event.target.closest("a[href]") : null);
    if (!link || link.target || link.hasAttribute("download")) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith(BASE) || url.pathname.startsWith(BASE + "/api")) return;
    event.preventDefault();
    navigate(url.pathname.slice(BASE.length) || "/");
  });
}
