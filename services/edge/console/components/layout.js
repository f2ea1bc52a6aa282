// The frame around every signed-in page: the left navigation and the account menu.
import { useEffect, useRef, useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";

const ICONS = {
  dashboard: "M3 13h8V3H3v10zm0 8h8v-6H3v6zm10 0h8V11h-8v10zm0-18v6h8V3h-8z",
  tokens: "M12.65 10A6 6 0 1 0 12.65 14H17v4h4v-4h2v-4H12.65zM7 14a2 2 0 1 1 0-4 2 2 0 0 1 0 4z",
  usage: "M4 20h16v2H4v-2zm1-9h3v7H5v-7zm5.5-5h3v12h-3V6zM16 3h3v15h-3V3z",
  playground: "M19 5v14H5V5h14m0-2H5a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h14a2 2 0 0 0 2-2V5a2 2 0 0 0-2-2zm-4.86 8.86-3 3.87L9 13.14 6 17h12l-3.86-5.14z",
  webhooks: "M10 15h5.88c.27-.31.67-.5 1.12-.5.83 0 1.5.67 1.5 1.5s-.67 1.5-1.5 1.5c-.44 0-.84-.2-1.12-.5H11.9A5 5 0 1 1 6 11.1v2.07A3 3 0 1 0 10 16v-1zm2.5-11a5 5 0 0 1 4.5 7.15l-1.78-.95A3 3 0 1 0 11 9.5L8.8 13.3c.13.22.2.47.2.7 0 .83-.67 1.5-1.5 1.5S6 14.83 6 14s.67-1.5 1.5-1.5h.08l2.3-3.97A5 5 0 0 1 12.5 4zm4 9c2.76 0 5 2.24 5 5s-2.24 5-5 5a5 5 0 0 1-4.16-2.23l1.72-1.03A3 3 0 1 0 16.5 15c-.64 0-1.23.2-1.72.54L12.6 11.8c-.35-.13-.6-.4-.6-.8 0-.55.45-1 1-1s1 .45 1 1l1.7 2.9c.26-.04.53-.06.8-.06z",
  admin: "M12 1 3 5v6c0 5.55 3.84 10.74 9 12 5.16-1.26 9-6.45 9-12V5l-9-4zm0 10.99h7c-.53 4.12-3.28 7.79-7 8.94V12H5V6.3l7-3.11v8.8z",
};

export const PAGES = [
  { path: "/", label: "Dashboard", icon: "dashboard" },
  { path: "/tokens", label: "Tokens", icon: "tokens" },
  { path: "/usage", label: "Usage", icon: "usage" },
  { path: "/playground", label: "Playground", icon: "playground" },
  { path: "/webhooks", label: "Webhooks", icon: "webhooks" },
  { path: "/admin", label: "Admin", icon: "admin", admin: true },
];

function Icon({ name }) {
  return html`<svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><path d=${ICONS[name]} /></svg>`;
}

function Brand() {
  return html`<a class="brand" href="/console">
    <img src="/console/favicon.svg" alt="" width="28" height="28" />
    <span>Orvado</span>
  </a>`;
}

function AccountMenu({ account, onSignOut }) {
  const [open, setOpen] = useState(false);
  /** @type {import("../vendor/preact.mjs").RefObject<HTMLElement>} */
  const menu = useRef(null);
  useEffect(() => {
    if (!open) return;
    const close = (event) => !menu.current?.contains(event.target) && setOpen(false);
    document.addEventListener("click", close);
    return () => document.removeEventListener("click", close);
  }, [open]);
  return html`<div class="account-menu" ref=${menu}>
    <button type="button" class="account-button" aria-haspopup="menu" aria-expanded=${open} onClick=${() => setOpen(!open)}>
      <span class="avatar" aria-hidden="true">${account.email.slice(0, 1).toUpperCase()}</span>
      <span class="account-email">${account.email}</span>
      <span class="caret" aria-hidden="true">▾</span>
    </button>
    ${open &&
    html`<div class="menu" role="menu" onClick=${() => setOpen(false)}>
      <div class="menu-head">
        <div class="small muted">Signed in as</div>
        <div class="menu-email">${account.email}</div>
        ${account.role === "admin" && html`<span class="badge badge-info">admin</span>`}
      </div>
      <a role="menuitem" href="/console/account">Change password</a>
      <button type="button" role="menuitem" onClick=${onSignOut}>Sign out</button>
    </div>`}
  </div>`;
}

export function Shell({ account, path, onSignOut, children }) {
  const pages = PAGES.filter((page) => !page.admin || account.role === "admin");
  const active = (page) => (page.path === "/" ? path === "/" : path === page.path || path.startsWith(page.path + "/"));
  return html`<div class="shell">
    <aside class="sidebar">
      <div class="sidebar-inner">
        <${Brand} />
        <nav class="nav" aria-label="Console">
          ${pages.map(
            (page) => html`<a href=${"/console" + (page.path === "/" ? "" : page.path)} class=${active(page) ? "nav-link active" : "nav-link"} aria-current=${active(page) ? "page" : undefined}>
              <${Icon} name=${page.icon} /> <span>${page.label}</span>
            </a>`,
          )}
        </nav>
        <div class="sidebar-foot muted small">
          <div>API base URL</div>
          <code class="api-base">${location.origin}/v1</code>
        </div>
      </div>
    </aside>
    <div class="main">
      <div class="topbar">
        <div class="topbar-spacer"></div>
        <${AccountMenu} account=${account} onSignOut=${onSignOut} />
      </div>
      <main class="content">${children}</main>
    </div>
  </div>`;
}
