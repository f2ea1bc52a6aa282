import { describeFaultInjection } from "./fault-suite.ts";

// Issue H §6: the fault test on the replicated topology on Kafka (fault-suite.ts): two
// processes of every service, each caller listing both, single replicas and the broker
// killed (-9) at random while the jobs run.
describeFaultInjection({ replicas: 2 });
