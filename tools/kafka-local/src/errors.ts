/** A broker that cannot be fetched, started or reached: the message says why, with its log tail. */
export class BrokerError extends Error {}
