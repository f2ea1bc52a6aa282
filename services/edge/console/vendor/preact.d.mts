// Types only: the edge serves preact's own ES module build at /console/vendor/preact.mjs
// (services/edge/src/console/static.ts); these lines give tsc the package's declarations for it.
export * from "preact";
