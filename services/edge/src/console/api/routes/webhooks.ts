import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ErrorCode, type WebhookDelivery, type WebhookEndpoint } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { parseInput, refuse } from "../errors.ts";
import { iso } from "../format.ts";
import { queryInteger } from "../query-numbers.ts";
import { sessionOf } from "../session.ts";

// Webhooks (docs/console.md, docs/api.md#webhooks): the signed-in account's endpoints and
// deliveries, and the operator's view of one account's. Generation owns them (WebhookService);
// every call names the session's account, or under /admin an account auth knows.

const NewEndpoint = z.strictObject({
  url: z.string().min(1).max(2048),
  events: z.array(z.string().min(1).max(100)).max(8).optional(),
});
const DeliveriesQuery = z.strictObject({
  endpointId: z.string().min(1).max(200).optional(),
  limit: queryInteger(1, 200).default(50),
});

export function endpointJson(endpoint: WebhookEndpoint) {
  return { id: endpoint.id, url: endpoint.url, events: endpoint.events, createdAt: iso(endpoint.createdAtUnixMs) };
}

export function deliveryJson(delivery: WebhookDelivery) {
  return {
    id: delivery.id,
    endpointId: delivery.endpointId,
    requestId: delivery.requestId,
    type: delivery.eventType,
    status: delivery.status,
    createdAt: iso(delivery.createdAtUnixMs),
    nextAttemptAt: delivery.nextAttemptAtUnixMs === undefined ? null : iso(delivery.nextAttemptAtUnixMs),
    attempts: delivery.attempts.map((attempt) => ({
      at: iso(attempt.startedAtUnixMs),
      durationMs: attempt.durationMs,
      statusCode: attempt.statusCode === 0 ? null : attempt.statusCode,
      error: attempt.error === "" ? null : attempt.error,
    })),
  };
}

/** The account's own endpoints and deliveries. */
export function webhookRoutes(api: FastifyInstance, { webhooks }: ConsoleApiDeps) {
  const own = (request: Parameters<typeof sessionOf>[0]) => sessionOf(request).account.accountId;

  api.get("/webhooks", async (request) => {
    const { endpoints } = await webhooks.listWebhookEndpoints({ accountId: own(request) });
    return { endpoints: endpoints.map(endpointJson) };
  });

  api.post("/webhooks", async (request, reply) => {
    const body = parseInput(NewEndpoint, request.body);
    const created = await webhooks.createWebhookEndpoint({ accountId: own(request), url: body.url, events: body.events ?? [] });
    return reply.code(201).send({ endpoint: endpointJson(created.endpoint!), secret: created.secret });
  });

  api.delete<{ Params: { id: string } }>("/webhooks/:id", async (request) => {
    const { endpoint } = await webhooks.deleteWebhookEndpoint({ accountId: own(request), endpointId: request.params.id });
    return { endpoint: endpointJson(endpoint!) };
  });

  api.post<{ Params: { id: string } }>("/webhooks/:id/rotate-secret", async (request) => {
    const rotated = await webhooks.rotateWebhookSecret({ accountId: own(request), endpointId: request.params.id });
    return { endpoint: endpointJson(rotated.endpoint!), secret: rotated.secret };
  });

  api.get("/webhooks/deliveries", async (request) => {
    const query = parseInput(DeliveriesQuery, request.query, "query");
    const { deliveries } = await webhooks.listWebhookDeliveries({ accountId: own(request), endpointId: query.endpointId ?? "", limit: query.limit });
    return { deliveries: deliveries.map(deliveryJson) };
  });

  api.post<{ Params: { id: string } }>("/webhooks/deliveries/:id/redeliver", async (request, reply) => {
    const { delivery } = await webhooks.redeliverWebhook({ accountId: own(request), deliveryId: request.params.id });
    return reply.code(202).send({ delivery: deliveryJson(delivery!) });
  });
}

/** The operator's view of one account's endpoints and latest deliveries (read only). */
export function adminWebhookRoutes(api: FastifyInstance, { auth, webhooks }: ConsoleApiDeps) {
  api.get<{ Params: { id: string } }>("/admin/accounts/:id/webhooks", async (request) => {
    const { account } = await auth.getAccount({ accountId: request.params.id });
    if (!account) throw refuse(ErrorCode.NOT_FOUND, "No such account");
    const [{ endpoints }, { deliveries }] = await Promise.all([
      webhooks.listWebhookEndpoints({ accountId: account.accountId }),
      webhooks.listWebhookDeliveries({ accountId: account.accountId, limit: 50 }),
    ]);
    return { endpoints: endpoints.map(endpointJson), deliveries: deliveries.map(deliveryJson) };
  });
}
