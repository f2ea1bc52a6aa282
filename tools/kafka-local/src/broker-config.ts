// What a local single-node KRaft broker is told: its server.properties and its
// log4j2 configuration. docs/events.md explains the topic settings.

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

/** server.properties for one process that is both the broker and the only controller. */
export function serverProperties(ports: BrokerPorts, storeDir: string): string {
  const settings: (readonly [string, string | number])[] = [
    ["process.roles", "broker,controller"],
    ["node.id", 1],
    ["controller.quorum.voters", `1@127.0.0.1:${ports.controllerPort}`],
    ["listeners", `PLAINTEXT://127.0.0.1:${ports.port},CONTROLLER://127.0.0.1:${ports.controllerPort}`],
    ["advertised.listeners", `PLAINTEXT://127.0.0.1:${ports.port}`],
    ["controller.listener.names", "CONTROLLER"],
    ["inter.broker.listener.name", "PLAINTEXT"],
    ["listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"],
    ["log.dirs", storeDir],
    ...SINGLE_NODE_SETTINGS,
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
