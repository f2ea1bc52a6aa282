// `npm start`: the whole service set with embedded defaults on one machine.
// First: on an unsupported Node the start stops here with one line (supported-node.ts).
import "./supported-node.ts";
import { createLogger, flushLogs, stopOnSignal, writeAddressesFile } from "@orvado/core";
import { startStack, streamDescription } from "./index.ts";
import { adminPasswordNote } from "./admin-password-note.ts";
import { describeChannels, servedModels } from "./banner-channels.ts";
import { loadStackConfig } from "./config.ts";

const logger = createLogger("orvado", process.env.LOG_LEVEL ?? "info");
const startedAtMs = Date.now();
const stack = await startStack({ logger }).catch((error: unknown) => {
  // A refused start (a models file tier without a price, a missing key, …) says why in plain lines,
  // with the fix its message names; the stack trace is for LOG_LEVEL=debug.
  logger.debug({ err: error }, "start refused");
  process.stderr.write(`\norvado: the start was refused:\n${error instanceof Error ? error.message : String(error)}\n\n`);
  process.exit(1);
});
const passwordNote = await adminPasswordNote(stack, startedAtMs);
const models = await servedModels(stack.generationUrl, stack.internalSecret);
// For `npx orvado` in another shell: the addresses chosen (no secret), removed when the stack stops.
const dataDir = loadStackConfig().dataDir;
const removeAddresses = writeAddressesFile(dataDir, {
  edge: stack.edgeUrl,
  auth: [stack.authUrl],
  billing: [stack.billingUrl],
  generation: [stack.generationUrl],
});
const banner = [
  "",
  "Orvado is running.",
  `  API (OpenAI-compatible):  ${stack.edgeUrl}/v1`,
  `  Console:                  ${stack.edgeUrl}/console (sign in as the admin; accounts, keys, usage, prices)`,
  `  Cost lookup:              ${stack.edgeUrl}/api/cost/request/<request id>`,
  `  Internal gRPC:            auth ${stack.authUrl}, billing ${stack.billingUrl}, generation ${stack.generationUrl}`,
  `  Billing events:           ${streamDescription(stack)}`,
  ...(passwordNote ? [`  ${passwordNote}`] : []),
  ...describeChannels(models).map((line) => `  ${line}`),
  `  CLI:                      npx orvado … finds these addresses in ${dataDir}/addresses.json while this runs`,
  "  Next: npx orvado accounts create --email you@example.com --password '…'   (see README)",
  "  Ctrl-C stops after the jobs in flight finish.",
  "",
];
// Its admin note points at the log "above": the lines still batched go out first.
flushLogs();
process.stdout.write(banner.join("\n") + "\n");
stopOnSignal(
  {
    async stop() {
      removeAddresses();
      await stack.stop();
    },
  },
  logger,
);
