import { describe, expect, it } from "vitest";
import pino from "pino";
import kafkajs from "kafkajs";
import { kafkaLogCreator } from "./kafka-log.ts";

// How kafkajs's log entries land in our logs (no broker: the entries are shaped as
// kafkajs's Connection and consumer Runner pass them to a logCreator).

const PINO = { debug: 20, info: 30, warn: 40, error: 50 };

function capture() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "trace" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const log = kafkaLogCreator(logger)(kafkajs.logLevel.DEBUG);
  /** What kafkajs's Connection logs when the broker answers a request with an error. */
  const response = (level: number, api: string, error?: string) =>
    log({ namespace: "Connection", level, label: "", log: { message: `Response ${api}`, timestamp: "", ...(error ? { error } : {}) } });
  const message = (level: number, text: string, extra: Record<string, unknown> = {}) =>
    log({ namespace: "Runner", level, label: "", log: { message: text, timestamp: "", ...extra } });
  return { lines, response, message };
}

describe("kafkajs's logging in pino", () => {
  it("logs a group forming at start (coordinator loading, group rebalancing) below error", () => {
    const { lines, response } = capture();
    response(kafkajs.logLevel.ERROR, "FindCoordinator(key: 10, version: 2)", "The coordinator is loading and hence can't process requests for this group");
    response(kafkajs.logLevel.ERROR, "FindCoordinator(key: 10, version: 2)", "The group coordinator is not available");
    response(kafkajs.logLevel.ERROR, "JoinGroup(key: 11, version: 5)", "The group is rebalancing, so a rejoin is needed");
    response(kafkajs.logLevel.ERROR, "Heartbeat(key: 12, version: 3)", "This is not the correct coordinator for this group");
    expect(lines.map((line) => line.level)).toEqual([PINO.info, PINO.info, PINO.info, PINO.info]);
  });

  it("logs a partition's leadership moving and a member rejoining as warnings", () => {
    const { lines, response, message } = capture();
    response(kafkajs.logLevel.ERROR, "Produce(key: 0, version: 7)", "This server is not the leader for that topic-partition");
    response(kafkajs.logLevel.ERROR, "Metadata(key: 3, version: 6)", "There is no leader for this topic-partition as we are in the middle of a leadership election");
    response(kafkajs.logLevel.ERROR, "Produce(key: 0, version: 7)", "Messages are rejected since there are fewer in-sync replicas than required");
    message(kafkajs.logLevel.ERROR, "The coordinator is not aware of this member, re-joining the group", { error: "The coordinator is not aware of this member" });
    // A fresh three-node cluster: the member ran out of retries while the group's coordinator moved, and kafkajs restarts it.
    message(kafkajs.logLevel.ERROR, "Crash: KafkaJSNumberOfRetriesExceeded: This is not the correct coordinator for this group", { retryCount: 5 });
    message(kafkajs.logLevel.ERROR, "Restarting the consumer in 399ms", { retryTime: 399 });
    expect(lines.map((line) => line.level)).toEqual(Array(6).fill(PINO.warn));
  });

  it("keeps any other error at error, and the topic another process created first at debug", () => {
    const { lines, response, message } = capture();
    response(kafkajs.logLevel.ERROR, "CreateTopics(key: 19, version: 3)", "Topic creation errors");
    response(kafkajs.logLevel.ERROR, "Produce(key: 0, version: 7)", "The request included a message larger than the max message size the server will accept");
    response(kafkajs.logLevel.ERROR, "Fetch(key: 1, version: 11)", "Something kafkajs has never seen");
    message(kafkajs.logLevel.ERROR, "Crash: KafkaJSNonRetriableError: Topic authorization failed");
    message(kafkajs.logLevel.ERROR, "Crash: KafkaJSNumberOfRetriesExceeded: Connection error: connect ECONNREFUSED 127.0.0.1:9092");
    expect(lines.map((line) => line.level)).toEqual([PINO.debug, PINO.error, PINO.error, PINO.error, PINO.error]);
    expect(lines[2]!.msg).toBe("Response Fetch(key: 1, version: 11)");
  });

  it("keeps kafkajs's own levels below error: INFO as debug, WARN as warn", () => {
    const { lines, message } = capture();
    message(kafkajs.logLevel.INFO, "Consumer has joined the group");
    message(kafkajs.logLevel.WARN, "Consumer group is slow to rebalance");
    expect(lines.map((line) => line.level)).toEqual([PINO.debug, PINO.warn]);
  });
});
