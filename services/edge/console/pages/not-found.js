import { html } from "../lib/html.js";
import { Card, Empty } from "../components/ui.js";

export function NotFound() {
  return html`<${Card}>
    <${Empty} title="There is no such page">Pick a page from the menu, or go back to the <a href="/console">dashboard</a>.<//>
  <//>`;
}
