// Types only: the edge serves eventsource-parser's own ES module build at /console/vendor/eventsource-parser.mjs
// (services/edge/src/console/static.ts); these lines give tsc the package's declarations for it.
export * from "eventsource-parser";
