// The console's entry: find out who is signed in, then show the page the address names.
import { render } from "./vendor/preact.mjs";
import { useEffect, useLayoutEffect, useRef, useState } from "./vendor/hooks.mjs";
import { html } from "./lib/html.js";
import { del, get, setCsrfToken, whenSignedOut } from "./lib/api.js";
import { interceptLinks, navigate, usePath } from "./lib/router.js";
import { Shell } from "./components/layout.js";
import { Alert, Loading } from "./components/ui.js";
import { SignIn } from "./pages/sign-in.js";
import { Dashboard } from "./pages/dashboard.js";
import { Tokens } from "./pages/tokens.js";
import { Usage } from "./pages/usage.js";
import { Playground } from "./pages/playground.js";
import { Webhooks } from "./pages/webhooks.js";
import { Admin } from "./pages/admin.js";
import { AccountPage } from "./pages/account.js";
import { NotFound } from "./pages/not-found.js";

const ROUTES = {
  "/": { title: "Dashboard", page: Dashboard },
  "/tokens": { title: "Tokens", page: Tokens },
  "/usage": { title: "Usage", page: Usage },
  "/playground": { title: "Playground", page: Playground },
  "/webhooks": { title: "Webhooks", page: Webhooks },
  "/admin": { title: "Admin", page: Admin, admin: true, nested: true },
  "/account": { title: "Account", page: AccountPage },
};

/** Shown on every page while the admin still signs in with the password generated at first start. */
function GeneratedPasswordNotice({ onAccountPage }) {
  return html`<${Alert} kind="warning">
    <strong>Change the generated password.</strong> This account still uses the password generated at first start, which was written to the
    service log. ${onAccountPage ? "Choose a new one below." : html`<a href="/console/account">Change it now</a>.`}
  <//>`;
}

/** A page is named by the first segment of the path; the page reads the rest (e.g. /admin/prices). */
function routeFor(path, account) {
  const base = "/" + path.split("/")[1];
  const route = ROUTES[base];
  const fits = route && (route.nested || base === path) && (!route.admin || account.role === "admin");
  if (!fits) return { title: "Not found", page: NotFound };
  return route;
}

function App() {
  const path = usePath();
  // undefined: still asking the server; null: signed out; object: the signed-in account.
  const [account, setAccount] = useState(/** @type {import("./lib/answers.js").AccountJson | null | undefined} */ (undefined));
  const returnTo = useRef("/");

  const signedIn = ({ account: who, csrfToken }) => {
    setCsrfToken(csrfToken);
    if (who.passwordGenerated) returnTo.current = "/account";
    setAccount(who);
  };
  const signedOut = () => {
    setCsrfToken(null);
    setAccount(null);
  };

  useEffect(() => {
    whenSignedOut(signedOut);
    get("/me").then(signedIn, signedOut);
  }, []);

  // Signed out on any page: the address becomes /console/sign-in, remembering where the user was;
  // signed in there, it goes back. Before the browser paints, so no page shows under the wrong address.
  useLayoutEffect(() => {
    if (account === null && path !== "/sign-in") {
      returnTo.current = path;
      navigate("/sign-in", { replace: true });
    }
    if (account && path === "/sign-in") navigate(returnTo.current, { replace: true });
  }, [account, path]);

  if (account === undefined) return html`<div class="boot"><${Loading}>Loading the console…<//></div>`;
  if (account === null) {
    document.title = "Sign in · Orvado";
    return html`<${SignIn} onSignedIn=${signedIn} />`;
  }
  if (path === "/sign-in") return html`<div class="boot"><${Loading}>Loading the console…<//></div>`;
  const route = routeFor(path, account);
  document.title = `${route.title} · Orvado`;
  const signOut = async () => {
    await del("/session").catch(() => null);
    returnTo.current = "/";
    navigate("/sign-in");
    signedOut();
  };
  const Page = route.page;
  const passwordChanged = () => setAccount({ ...account, passwordGenerated: false });
  return html`<${Shell} account=${account} path=${path} onSignOut=${signOut}>
    ${account.passwordGenerated && html`<${GeneratedPasswordNotice} onAccountPage=${path === "/account"} />`}
    <${Page} account=${account} path=${path} key=${route.title} onPasswordChanged=${passwordChanged} />
  <//>`;
}

interceptLinks();
render(html`<${App} />`, /** @type {HTMLElement} */ (document.getElementById("app")));
