import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { microsToUsd } from "@orvado/core";
import type { ConsoleApiDeps } from "../deps.ts";
import { queryInteger } from "../query-numbers.ts";
import { parseInput } from "../errors.ts";
import { balanceJson } from "../format.ts";
import { sessionOf } from "../session.ts";
import type { BalanceAnswer, SpendAnswer } from "../answers.ts";

const SpendQuery = z.strictObject({ days: queryInteger(1, 366).default(30) });

/** The signed-in account's balance and its spend per day, from billing's projections. */
export function moneyRoutes(api: FastifyInstance, { billing }: ConsoleApiDeps) {
  api.get("/balance", async (request): Promise<BalanceAnswer> => {
    const { balance } = await billing.getBalance({ accountId: sessionOf(request).account.accountId });
    return balanceJson(balance);
  });

  api.get("/spend", async (request): Promise<SpendAnswer> => {
    const { days } = parseInput(SpendQuery, request.query, "query");
    const answer = await billing.getSpendByDay({ accountId: sessionOf(request).account.accountId, days });
    return {
      days: answer.days.map((day) => ({
        date: day.date,
        usd: microsToUsd(day.amountMicros),
        micros: Number(day.amountMicros),
        // Charged requests only; failed and expired ones are counted apart.
        requests: day.requests,
        notCharged: day.notCharged,
        pending: day.pending,
      })),
    };
  });
}
