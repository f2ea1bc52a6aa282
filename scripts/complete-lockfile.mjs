// The npm registry reachable from this project's machines serves Linux builds only, so
// `npm install` leaves other platforms' optional packages (esbuild, rollup, buf, sharp
// binaries) out of package-lock.json, and `npm ci` then refuses the lock as incomplete.
// This adds a bare optional entry for each one; npm ci skips optional packages it cannot
// fetch, so installs stay exactly as before, and on other registries nothing changes.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;
let added = 0;

for (const [location, meta] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${location ? `${location}/` : ""}node_modules/${name}`;
    const top = `node_modules/${name}`;
    if (packages[nested] || packages[top]) continue;
    packages[top] = { version: String(range).replace(/^[\^~]/, ""), optional: true, ...(meta.dev ? { dev: true } : {}) };
    added += 1;
  }
}

if (added > 0) {
  writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`complete-lockfile: recorded ${added} optional packages for other platforms`);
}
