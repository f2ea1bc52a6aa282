import { describeFaultInjection } from "./fault-suite.ts";

// The fault test on one process of each service (fault-suite.ts), on the stream of
// the test project: the Postgres log in "embedded", Kafka (its broker killed too) in "kafka".
describeFaultInjection({ replicas: 1 });
