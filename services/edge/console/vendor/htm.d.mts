// Types only: /console/vendor/htm.mjs is htm's ES module build (src/console/static.ts).
import htm from "htm";
export default htm;
