/**
 * True once a broker of the list answers a metadata request (the cluster's
 * brokers and controller) that names at least `brokerCount` brokers, false if
 * none does within timeoutMs. Used to wait for a broker, or every node of a
 * cluster, that is starting.
 */
export async function kafkaBrokerAnswers(brokers: string[], timeoutMs: number, brokerCount = 1): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  // Loaded here, not at the module's top: every service imports @orvado/events, and one on the Postgres log never needs kafkajs (open.ts).
  const { Kafka, logLevel } = (await import("kafkajs")).default;
  const kafka = new Kafka({ clientId: "orvado-probe", brokers, logLevel: logLevel.NOTHING, connectionTimeout: 1_000, retry: { retries: 0 } });
  while (Date.now() < deadline) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      if (cluster.brokers.length >= brokerCount && cluster.controller !== null) return true;
    } catch {
      // Not up yet: connection refused, or the broker has not elected its controller.
    } finally {
      await admin.disconnect().catch(() => {});
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}
