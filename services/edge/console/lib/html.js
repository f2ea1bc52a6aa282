// htm bound to preact: components are written as tagged templates, no build step.
import { h } from "/console/vendor/preact.mjs";
import htm from "/console/vendor/htm.mjs";

export const html = htm.bind(h);
