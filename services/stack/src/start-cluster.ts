// `npm run start:cluster`: the production topology on one machine (cluster.ts).
import { ClusterSetupError, startCluster, type RunningCluster } from "./cluster.ts";
import { describeChannels } from "./banner-channels.ts";

const say = (text: string) => process.stdout.write(`${text}\n`);

let cluster: RunningCluster;
try {
  say("Building the services' bundles and starting auth, billing, generation and edge, two processes each …");
  cluster = await startCluster({ onLog: (source, line) => process.stderr.write(`[${source}] ${line}\n`) });
} catch (error) {
  if (!(error instanceof ClusterSetupError)) throw error;
  process.stderr.write(`orvado: ${error.message}\n`);
  process.exit(2);
}

const { url, urls } = cluster;
say(
  [
    "",
    "Orvado is running: the production topology on one machine.",
    `  API (OpenAI-compatible):  ${url}/v1   (HAProxy in front of ${urls.edge.length} edges: ${urls.edge.join(", ")})`,
    `  Console:                  ${url}/console`,
    `  Cost lookup:              ${url}/api/cost/request/<request id>`,
    `  Billing events:           Kafka at ${cluster.kafkaBrokers.join(", ")} (KAFKA_BROKERS); data in PostgreSQL (DATABASE_URL)`,
    `  Images:                   ${cluster.imageDir} (shared by both generation processes)`,
    ...describeChannels(cluster.models).map((line) => `  ${line}`),
    `  The CLI (npx orvado …) finds every replica's address in ${cluster.dataDir}/addresses.json while this runs:`,
    `    auth ${urls.auth.join(", ")}; billing ${urls.billing.join(", ")}; generation ${urls.generation.join(", ")}`,
    "  Ctrl-C stops: the balancer takes no new requests, jobs in flight finish, then the services stop.",
    "",
  ].join("\n"),
);

let stopping = false;
const onSignal = () => {
  if (stopping) {
    say("Second signal: killing every process now.");
    cluster.kill();
    process.exit(130);
  }
  stopping = true;
  say("Stopping: waiting for requests in flight (a second Ctrl-C kills everything) …");
  cluster.stop().then(
    () => {
      say("Stopped.");
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`orvado: stop failed: ${String(error)}\n`);
      cluster.kill();
      process.exit(1);
    },
  );
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);
