import { describe, expect, it } from "vitest";
import pino from "pino";
import kafkajs from "kafkajs";
import { kafkaLogCreator } from "./kafka-log.ts";

// How kafkajs's log entries land in our logs (no broker: the entries are what kafkajs passes).

function capture() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "trace" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const log = kafkaLogCreator(logger)(kafkajs.logLevel.DEBUG);
  const entry = (level: number, extra: Record<string, unknown>) =>
    log({ namespace: "Connection", level, label: "", log: { message: "Response CreateTopics(key: 19, version: 3)", timestamp: "", ...extra } });
  return { lines, entry };
}

describe("kafkajs's logging in pino", () => {
  it("keeps a broker's refusal at error, but logs the topic another process created first at debug", () => {
    const { lines, entry } = capture();
    entry(kafkajs.logLevel.ERROR, { error: "Topic creation errors" });
    entry(kafkajs.logLevel.ERROR, { error: "The group is rebalancing, so a rejoin is needed" });
    entry(kafkajs.logLevel.INFO, {});
    expect(lines.map((line) => line.level)).toEqual([20, 50, 20]);
  });
});
