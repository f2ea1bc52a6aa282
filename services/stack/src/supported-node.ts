// The Node.js majors Orvado runs on (package.json "engines"). npm ci brings Node 24
// (the node-linux-* packages in the root package.json) and npm scripts run it, so
// only a start outside npm on an older machine Node reaches the refusal below.
// Imported first, for its effect: it runs before any other module of the start.

/** The oldest Node.js major Orvado supports. */
export const OLDEST_SUPPORTED_NODE_MAJOR = 24;

/** One line saying why this Node cannot run Orvado, or undefined when it can. */
export function unsupportedNodeReason(version: string, execPath: string): string | undefined {
  const major = Number(version.split(".")[0]);
  if (major >= OLDEST_SUPPORTED_NODE_MAJOR) return undefined;
  return `Orvado needs Node.js ${OLDEST_SUPPORTED_NODE_MAJOR} or later, but ${execPath} is Node.js ${version}: start it with npm start (npm ci installs Node ${OLDEST_SUPPORTED_NODE_MAJOR} into node_modules/.bin), or install Node.js ${OLDEST_SUPPORTED_NODE_MAJOR}.`;
}

const reason = unsupportedNodeReason(process.versions.node, process.execPath);
if (reason) {
  process.stderr.write(`${reason}\n`);
  process.exit(1);
}
