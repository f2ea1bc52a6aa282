import type { ConnectRouter } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { WebhookService, type WebhookDeliverySchema, type WebhookEndpointSchema } from "@orvado/proto";
import { Code, ConnectError } from "@orvado/rpc";
import type { Db } from "@orvado/db";
import { checkWebhookUrl, WebhookUrlError } from "./endpoint-url.ts";
import { checkEventTypes, WebhookEventsError } from "./event-types.ts";
import { createEndpoint, deleteEndpoint, listEndpoints, rotateSecret, TooManyEndpoints, type EndpointRow } from "./endpoints.ts";
import { listDeliveries, redeliver, type AttemptRow, type DeliveryRow } from "./deliveries.ts";

// WebhookService (proto/orvado/v1/webhooks.proto), served by generation beside GenerationService.

const MAX_ID = 200;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/** Ids come from a client through the edge (well-formed there; protobuf carries no other text): bounded before SQL. */
function id(name: string, value: string, required: boolean): string {
  if (required && value === "") throw new ConnectError(`${name} is required`, Code.InvalidArgument);
  if (value.length > MAX_ID) throw new ConnectError(`${name} is not a valid id`, Code.InvalidArgument);
  return value;
}

const notFound = (what: string) => new ConnectError(`no such ${what}`, Code.NotFound);
const unixMs = (date: Date) => BigInt(date.getTime());

function endpointMessage(row: EndpointRow): MessageInitShape<typeof WebhookEndpointSchema> {
  return { id: row.endpoint_id, accountId: row.account_id, url: row.url, events: row.events, createdAtUnixMs: unixMs(row.created_at) };
}

function deliveryMessage(row: DeliveryRow, attempts: AttemptRow[]): MessageInitShape<typeof WebhookDeliverySchema> {
  return {
    id: row.delivery_id,
    endpointId: row.endpoint_id,
    requestId: row.request_id,
    eventType: row.event_type,
    status: row.status,
    createdAtUnixMs: unixMs(row.created_at),
    nextAttemptAtUnixMs: row.status === "pending" ? unixMs(row.next_attempt_at) : undefined,
    attempts: attempts.map((attempt) => ({
      startedAtUnixMs: unixMs(attempt.started_at),
      durationMs: attempt.duration_ms,
      statusCode: attempt.status_code ?? 0,
      error: attempt.error ?? "",
    })),
  };
}

export function webhookRoutes(deps: { db: Db; allowPrivateUrls: boolean }) {
  const { db } = deps;
  return (router: ConnectRouter) =>
    router.service(WebhookService, {
      async createWebhookEndpoint(req) {
        const accountId = id("account_id", req.accountId, true);
        let url: string;
        let events: string[];
        try {
          url = await checkWebhookUrl(req.url, deps.allowPrivateUrls);
          events = checkEventTypes(req.events);
        } catch (error) {
          if (error instanceof WebhookUrlError || error instanceof WebhookEventsError) throw new ConnectError(error.message, Code.InvalidArgument);
          throw error;
        }
        try {
          const { endpoint, secret } = await createEndpoint(db, accountId, url, events);
          return { endpoint: endpointMessage(endpoint), secret };
        } catch (error) {
          if (error instanceof TooManyEndpoints) throw new ConnectError(error.message, Code.FailedPrecondition);
          throw error;
        }
      },
      async listWebhookEndpoints(req) {
        const rows = await listEndpoints(db, id("account_id", req.accountId, true));
        return { endpoints: rows.map(endpointMessage) };
      },
      async deleteWebhookEndpoint(req) {
        const row = await deleteEndpoint(db, id("account_id", req.accountId, false), id("endpoint_id", req.endpointId, true));
        if (!row) throw notFound("webhook endpoint");
        return { endpoint: endpointMessage(row) };
      },
      async rotateWebhookSecret(req) {
        const rotated = await rotateSecret(db, id("account_id", req.accountId, true), id("endpoint_id", req.endpointId, true));
        if (!rotated) throw notFound("webhook endpoint");
        return { endpoint: endpointMessage(rotated.endpoint), secret: rotated.secret };
      },
      async listWebhookDeliveries(req) {
        if (req.limit > MAX_LIMIT) throw new ConnectError(`limit must be 1..${MAX_LIMIT}`, Code.InvalidArgument);
        const rows = await listDeliveries(db, id("account_id", req.accountId, true), id("endpoint_id", req.endpointId, false), req.limit || DEFAULT_LIMIT);
        return { deliveries: rows.map(({ delivery, attempts }) => deliveryMessage(delivery, attempts)) };
      },
      async redeliverWebhook(req) {
        const row = await redeliver(db, id("account_id", req.accountId, true), id("delivery_id", req.deliveryId, true));
        if (!row) throw notFound("webhook delivery");
        return { delivery: deliveryMessage(row, []) };
      },
    });
}
