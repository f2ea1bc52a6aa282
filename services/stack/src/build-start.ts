// `npm start`'s first step: the one-process stack (start.ts and every service it
// starts) bundled into services/stack/dist/start.mjs, which npm start then runs
// with plain node (build-services.ts bundleOneProcess: no TypeScript loader on the hot path).
// First: on an unsupported Node the start stops here with one line (supported-node.ts).
import "./supported-node.ts";
import { fileURLToPath } from "node:url";
import { bundleOneProcess } from "./build-services.ts";

/** Where npm start's bundle is written (package.json runs it). */
const START_BUNDLE_DIR = fileURLToPath(new URL("../dist", import.meta.url));

export function buildStartBundle(): Promise<string> {
  return bundleOneProcess(fileURLToPath(new URL("./start.ts", import.meta.url)), START_BUNDLE_DIR);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildStartBundle();
