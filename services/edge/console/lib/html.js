// htm bound to preact: components are written as tagged templates, no build step.
import { h } from "../vendor/preact.mjs";
import htm from "../vendor/htm.mjs";

export const html = htm.bind(h);
