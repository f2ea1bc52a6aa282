// The events an endpoint can take: a job's final outcome (docs/api.md#webhooks).
export const WEBHOOK_EVENT_TYPES = ["image.generation.succeeded", "image.generation.failed"] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export class WebhookEventsError extends Error {}

/** The types given, each once, in the standard order; none given means all of them. */
export function checkEventTypes(given: readonly string[]): WebhookEventType[] {
  if (given.length === 0) return [...WEBHOOK_EVENT_TYPES];
  if (given.length > WEBHOOK_EVENT_TYPES.length * 4) throw new WebhookEventsError("events: too many entries");
  const unknown = given.find((type) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type));
  if (unknown !== undefined) {
    throw new WebhookEventsError(`events: ${JSON.stringify(unknown.slice(0, 100))} is not an event type (${WEBHOOK_EVENT_TYPES.join(", ")})`);
  }
  return WEBHOOK_EVENT_TYPES.filter((type) => given.includes(type));
}
