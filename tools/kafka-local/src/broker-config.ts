// What a local KRaft broker is told, alone or as one node of a local cluster:
// its server.properties and its log4j2 configuration. docs/events.md explains
// the topic settings.

export interface BrokerPorts {
  /** Clients connect here (PLAINTEXT on 127.0.0.1). */
  port: number;
  /** The KRaft controller's own listener. */
  controllerPort: number;
}

/**
 * The broker settings beyond its listeners and store: what every single-node
 * broker the tests use is told (this one, and the container test-containers.ts
 * starts where Docker answers), so both behave alike.
 */
export const SINGLE_NODE_SETTINGS: readonly (readonly [string, string | number])[] = [
  // One node: internal topics cannot have more replicas than brokers.
  ["offsets.topic.replication.factor", 1],
  ["offsets.topic.num.partitions", 10],
  ["transaction.state.log.replication.factor", 1],
  ["transaction.state.log.min.isr", 1],
  ["share.coordinator.state.topic.replication.factor", 1],
  ["share.coordinator.state.topic.min.isr", 1],
  // Orvado creates its topics itself (libs/events/src/kafka-topics.ts), with their partition count.
  ["auto.create.topics.enable", "false"],
  ["num.partitions", 3],
  // A lone broker has no one to wait for: groups form at once (tests join many groups).
  ["group.initial.rebalance.delay.ms", 0],
  ["log.retention.hours", 168],
  // The log cleaner (compacted topics such as __consumer_offsets) allocates this buffer on the
  // heap at start. Kafka's default, 128 MiB, does not fit the smallest heap kafka:up allows
  // (KAFKA_HEAP_MB=128: OutOfMemoryError at every start) and at 256 MiB failed a start in CI.
  // 16 MiB dedupes about 700,000 keys per cleaning, more than a development broker holds.
  ["log.cleaner.dedupe.buffer.size", 16 * 1024 * 1024],
];

/**
 * A node of a local cluster: its id and every voter's controller port. Each node
 * is a broker and a controller (a combined node), so three processes make a
 * quorum that survives the loss of one: no separate controller processes to run.
 */
export interface QuorumNode {
  nodeId: number;
  /** The controller ports of all the cluster's nodes, node 1 first. */
  controllerPorts: readonly number[];
}

/**
 * What a cluster of three or more nodes changes: Kafka's own topics and any topic created
 * without a replication factor get three replicas, and a write with acks=all is confirmed
 * once two of them have it (a broker may die without losing a confirmed write or stopping
 * writes). The rest is as on a single node.
 */
export const CLUSTER_SETTINGS: readonly (readonly [string, string | number])[] = [
  ...SINGLE_NODE_SETTINGS.filter(([key]) => !/replication\.factor$|min\.isr$/.test(key)),
  ["default.replication.factor", 3],
  ["min.insync.replicas", 2],
  ["offsets.topic.replication.factor", 3],
  ["transaction.state.log.replication.factor", 3],
  ["transaction.state.log.min.isr", 2],
  ["share.coordinator.state.topic.replication.factor", 3],
  ["share.coordinator.state.topic.min.isr", 2],
];

const SINGLE_NODE: (ports: BrokerPorts) => QuorumNode = (ports) => ({ nodeId: 1, controllerPorts: [ports.controllerPort] });

/** server.properties for one process that is a broker and a controller: alone, or a node of a local cluster. */
export function serverProperties(ports: BrokerPorts, storeDir: string, node: QuorumNode = SINGLE_NODE(ports)): string {
  const voters = node.controllerPorts.map((port, index) => `${index + 1}@127.0.0.1:${port}`).join(",");
  const settings: (readonly [string, string | number])[] = [
    ["process.roles", "broker,controller"],
    ["node.id", node.nodeId],
    ["controller.quorum.voters", voters],
    ["listeners", `PLAINTEXT://127.0.0.1:${ports.port},CONTROLLER://127.0.0.1:${ports.controllerPort}`],
    ["advertised.listeners", `PLAINTEXT://127.0.0.1:${ports.port}`],
    ["controller.listener.names", "CONTROLLER"],
    ["inter.broker.listener.name", "PLAINTEXT"],
    ["listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"],
    ["log.dirs", storeDir],
    ...(node.controllerPorts.length >= 3 ? CLUSTER_SETTINGS : SINGLE_NODE_SETTINGS),
  ];
  return settings.map(([key, value]) => `${key}=${value}\n`).join("");
}

/** log4j2: everything at INFO into broker.log (stdout is redirected there), nothing else. */
export function log4jProperties(): string {
  return [
    "status = warn",
    "appender.out.type = Console",
    "appender.out.name = out",
    "appender.out.layout.type = PatternLayout",
    "appender.out.layout.pattern = [%d] %p %m (%c)%n",
    "rootLogger.level = info",
    "rootLogger.appenderRef.out.ref = out",
    // The request and state-change loggers are per request: far too chatty for a dev broker.
    "logger.request.name = kafka.request.logger",
    "logger.request.level = warn",
    "logger.state.name = state.change.logger",
    "logger.state.level = warn",
    "",
  ].join("\n");
}
