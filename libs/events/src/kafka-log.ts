import type { Logger } from "@orvado/core";
import kafkajs from "kafkajs";
import type { logCreator } from "kafkajs";

const { logLevel } = kafkajs;

/** Routes kafkajs's own logging into our pino logger; its chatty INFO lines become debug. */
export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ component: "kafkajs" });
  return () =>
    ({ namespace, level, log: entry }) => {
      const { message, timestamp: _timestamp, ...extra } = entry;
      const fields = { namespace, ...extra };
      if (level === logLevel.ERROR && expectedRefusal(extra)) log.debug(fields, message);
      else if (level === logLevel.ERROR) log.error(fields, message);
      else if (level === logLevel.WARN) log.warn(fields, message);
      else if (level === logLevel.INFO) log.debug(fields, message);
      else log.trace(fields, message);
    };
}

/**
 * Refusals kafkajs logs at ERROR as the broker answers, and then handles itself: a topic
 * that another process created first (createTopics then resolves false). Every replica's
 * start would otherwise log an error.
 */
function expectedRefusal(extra: Record<string, unknown>): boolean {
  return extra.error === "Topic creation errors";
}
