// Types only: /console/vendor/hooks.mjs is preact/hooks' ES module build (src/console/static.ts).
export * from "preact/hooks";
