import type { WebhookEndpoint } from "@orvado/proto";
import type { Command } from "./args.ts";
import { CALL, call, present, type CommandContext, type Out } from "./commands.ts";
import { isoTime } from "./format.ts";

// `orvado webhooks …`: an account's webhook endpoints, through generation's WebhookService.

function endpointJson(endpoint: WebhookEndpoint): Out {
  return { id: endpoint.id, account_id: endpoint.accountId, url: endpoint.url, events: endpoint.events, created_at: isoTime(endpoint.createdAtUnixMs) };
}

async function knownAccount(ctx: CommandContext, accountId: string): Promise<void> {
  const lookup = `looking up account ${accountId}`;
  present((await call("auth", lookup, () => ctx.clients.auth.getAccount({ accountId }, CALL))).account, "auth", lookup);
}

export async function createWebhook(ctx: CommandContext, cmd: Extract<Command, { name: "webhooks create" }>): Promise<Out> {
  await knownAccount(ctx, cmd.accountId);
  const what = `creating a webhook endpoint for account ${cmd.accountId}`;
  const response = await call("generation", what, () =>
    ctx.clients.webhooks.createWebhookEndpoint({ accountId: cmd.accountId, url: cmd.url, events: cmd.events }, CALL),
  );
  return { ...endpointJson(present(response.endpoint, "generation", what)), secret: response.secret, note: "The secret is shown once: store it now" };
}

export async function listWebhooks(ctx: CommandContext, cmd: Extract<Command, { name: "webhooks list" }>): Promise<Out> {
  await knownAccount(ctx, cmd.accountId);
  const what = `listing the webhook endpoints of account ${cmd.accountId}`;
  const response = await call("generation", what, () => ctx.clients.webhooks.listWebhookEndpoints({ accountId: cmd.accountId }, CALL));
  return { account_id: cmd.accountId, endpoints: response.endpoints.map(endpointJson) };
}

export async function deleteWebhook(ctx: CommandContext, cmd: Extract<Command, { name: "webhooks delete" }>): Promise<Out> {
  const what = `deleting webhook endpoint ${cmd.endpointId}`;
  // The operator names the endpoint alone (no account): generation deletes it whoever's it is.
  const response = await call("generation", what, () => ctx.clients.webhooks.deleteWebhookEndpoint({ accountId: "", endpointId: cmd.endpointId }, CALL));
  return { deleted: endpointJson(present(response.endpoint, "generation", what)) };
}
