export * from "./types.ts";
export { openEventStream, type OpenEventStreamOptions } from "./open.ts";
export { waitForGroup } from "./wait-for-group.ts";
export { migrateOutbox, enqueueOutbox, outboxInsert, type OutboxInsert } from "./outbox.ts";
export { startOutboxRelay, type OutboxRelay } from "./outbox-relay.ts";
export * from "./billing-event.ts";
export { kafkaBrokerAnswers } from "./kafka-probe.ts";
export { kafkaEnvShape, kafkaSettings, kafkaSettingsFromEnv, type KafkaSettings } from "./kafka-settings.ts";
