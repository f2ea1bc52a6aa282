export { BrokerError, DEFAULT_KAFKA_PORT, startLocalBroker, stopLocalBroker, runningBrokerPid, type LocalBroker, type LocalBrokerOptions } from "./broker.ts";
export { clusterNode, freeClusterBasePort, startLocalCluster, stopLocalCluster, type LocalCluster, type LocalClusterOptions } from "./cluster.ts";
export { publishRetrying } from "./publish-retrying.ts";
