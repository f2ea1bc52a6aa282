import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { TIMESTAMP_RANGE_TEXT, parseSupportedTimestamp, usdToMicros } from "@orvado/core";
import { ErrorCode, type ApiKey } from "@orvado/proto";
import type { ConsoleApiDeps } from "../deps.ts";
import { parseInput, refuse } from "../errors.ts";
import { keyJson } from "../format.ts";
import { sessionOf } from "../session.ts";
import type { KeysAnswer, NewKeyAnswer } from "../answers.ts";
import { modelsByName } from "../../../routes/models.ts";

const usd = z.string().refine((text) => usdToMicros(text) !== null, "must be a decimal USD amount such as \"5.00\"");
const isoTime = z.string().refine((text) => parseSupportedTimestamp(text) !== null, `must be an ISO 8601 time ${TIMESTAMP_RANGE_TEXT}`);

const NewKey = z.strictObject({
  // Empty or left out: auth names the key "default", as the CLI does.
  name: z.string().max(100).default(""),
  limitUsd: usd.nullish(),
  expiresAt: isoTime.nullish(),
  models: z.array(z.string().min(1).max(200)).max(100).nullish(),
});

/** The signed-in account's API keys. Every call names the session's account, never one from the request. */
export function keyRoutes(api: FastifyInstance, { auth, billing, generation }: ConsoleApiDeps) {
  async function withSpend(accountId: string, keys: ApiKey[]) {
    if (keys.length === 0) return [];
    const spend = await billing.getKeySpend({ accountId, keyIds: keys.map((key) => key.keyId) });
    const byKey = new Map(spend.keys.map((entry) => [entry.keyId, entry]));
    return keys.map((key) => keyJson(key, byKey.get(key.keyId)));
  }

  /**
   * A typo in an allowlist would make a key that can never be used: name the unknown id instead.
   * An alias is stored as the model's own id, the name usage and prices know it by.
   */
  async function canonicalModels(models: string[]): Promise<string[]> {
    if (models.length === 0) return [];
    const known = modelsByName((await generation.listModels({})).models);
    const unknown = models.find((model) => !known.has(model));
    if (unknown !== undefined) throw refuse(ErrorCode.INVALID_FIELD, `models: ${JSON.stringify(unknown)} is not a model of this service`);
    return [...new Set(models.map((model) => known.get(model)!.id))];
  }

  api.get("/keys", async (request): Promise<KeysAnswer> => {
    const accountId = sessionOf(request).account.accountId;
    const { keys } = await auth.listKeys({ accountId });
    return { keys: await withSpend(accountId, keys) };
  });

  api.post("/keys", async (request, reply) => {
    const body = parseInput(NewKey, request.body);
    const accountId = sessionOf(request).account.accountId;
    const models = await canonicalModels(body.models ?? []);
    const created = await auth.createKey({
      accountId,
      name: body.name,
      limitMicros: body.limitUsd ? usdToMicros(body.limitUsd)! : undefined,
      expiresAtUnixMs: body.expiresAt ? BigInt(Date.parse(body.expiresAt)) : undefined,
      models,
    });
    const [key] = await withSpend(accountId, [created.key!]);
    return reply.code(201).send({ key, secret: created.secret } satisfies NewKeyAnswer);
  });

  api.delete<{ Params: { id: string } }>("/keys/:id", async (request) => {
    const accountId = sessionOf(request).account.accountId;
    // Auth revokes only within this account: another account's key id is a 404, like no key.
    const { key } = await auth.revokeKey({ accountId, keyId: request.params.id });
    const [json] = await withSpend(accountId, [key!]);
    return { key: json };
  });
}
