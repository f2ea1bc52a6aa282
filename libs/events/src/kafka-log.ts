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
      if (level === logLevel.ERROR) log.error(fields, message);
      else if (level === logLevel.WARN) log.warn(fields, message);
      else if (level === logLevel.INFO) log.debug(fields, message);
      else log.trace(fields, message);
    };
}
