/**
 * A publish retried until it succeeds, as Orvado's outbox relay retries it: until the
 * controller has fenced the dead broker (broker.session.timeout.ms, 9 s) and moved its
 * leaderships, kafkajs's own retries may run out.
 */
export async function publishRetrying(publish: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await publish();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
