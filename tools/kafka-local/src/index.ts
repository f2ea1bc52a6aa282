export { BrokerError, DEFAULT_KAFKA_PORT, startLocalBroker, stopLocalBroker, runningBrokerPid, type LocalBroker, type LocalBrokerOptions } from "./broker.ts";
