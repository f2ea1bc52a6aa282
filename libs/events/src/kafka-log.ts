import type { Logger } from "@orvado/core";
import kafkajs from "kafkajs";
import type { logCreator } from "kafkajs";

const { logLevel } = kafkajs;

/**
 * Routes kafkajs's own logging into our pino logger. Its chatty INFO lines become
 * debug, and the entries it logs at ERROR for states a cluster passes through and
 * kafkajs retries by itself go one or two levels down (kafkaErrorLevel): a normal
 * start or a broker failover then logs no error-level line, while anything else
 * kafkajs calls an error stays one.
 */
export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ component: "kafkajs" });
  return () =>
    ({ namespace, level, log: entry }) => {
      const { message, timestamp: _timestamp, ...extra } = entry;
      const fields = { namespace, ...extra };
      if (level === logLevel.ERROR) log[kafkaErrorLevel(message, extra)](fields, message);
      else if (level === logLevel.WARN) log.warn(fields, message);
      else if (level === logLevel.INFO) log.debug(fields, message);
      else log.trace(fields, message);
    };
}

/**
 * The broker's answers (kafkajs's protocol error messages, by Kafka error name) that
 * say a group is forming or its coordinator moving: every member's start meets them,
 * and kafkajs retries or rejoins after each.
 */
const GROUP_FORMING = new Set([
  "The coordinator is loading and hence can't process requests for this group", // GROUP_LOAD_IN_PROGRESS
  "The group coordinator is not available", // GROUP_COORDINATOR_NOT_AVAILABLE
  "This is not the correct coordinator for this group", // NOT_COORDINATOR_FOR_GROUP
  "The group is rebalancing, so a rejoin is needed", // REBALANCE_IN_PROGRESS
]);

/**
 * Answers that say a partition's leadership is moving (a broker stopped or died):
 * kafkajs refreshes its metadata and retries. Worth a warning, not an error: a
 * write that never succeeds still fails its caller, which logs that itself.
 */
const LEADERSHIP_MOVING = new Set([
  "There is no leader for this topic-partition as we are in the middle of a leadership election", // LEADER_NOT_AVAILABLE
  "This server is not the leader for that topic-partition", // NOT_LEADER_FOR_PARTITION
  "Messages are rejected since there are fewer in-sync replicas than required", // NOT_ENOUGH_REPLICAS
  "Messages are written to the log, but to fewer in-sync replicas than required", // NOT_ENOUGH_REPLICAS_AFTER_APPEND
]);

/** Messages kafkajs's consumer logs at ERROR before it rejoins its group on its own. */
const REJOINING = new Set(["The coordinator is not aware of this member, re-joining the group"]);

/** The pino level of an entry kafkajs logs at ERROR. */
export function kafkaErrorLevel(message: string, extra: Record<string, unknown>): "debug" | "info" | "warn" | "error" {
  const answer = typeof extra.error === "string" ? extra.error : message;
  // A topic another process created first: createTopics resolves false, and every replica's start meets it.
  if (answer === "Topic creation errors") return "debug";
  if (GROUP_FORMING.has(answer)) return "info";
  if (LEADERSHIP_MOVING.has(answer) || REJOINING.has(message)) return "warn";
  // A member whose retries ran out while its group was forming: kafkajs restarts it (and says so next).
  const crashedOn = /^Crash: \w+: (.*)$/.exec(message)?.[1];
  if (crashedOn !== undefined && GROUP_FORMING.has(crashedOn)) return "warn";
  if (message.startsWith("Restarting the consumer in ")) return "warn";
  return "error";
}
