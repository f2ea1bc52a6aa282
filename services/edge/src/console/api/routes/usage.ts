import type { FastifyInstance } from "fastify";
import type { ConsoleApiDeps } from "../deps.ts";
import { parseInput } from "../errors.ts";
import { usageRow } from "../format.ts";
import { csvLine, csvRow, USAGE_COLUMNS } from "../csv.ts";
import { costFilter, UsageQuery } from "../usage-query.ts";
import { sessionOf } from "../session.ts";
import { requestDetail } from "../request-detail.ts";
import type { RequestDetailAnswer, UsagePage } from "../answers.ts";

/** The export reads pages of this size, and stops at this many rows so one call stays bounded. */
const EXPORT_PAGE = 1000;
const EXPORT_MAX_ROWS = 100_000;

/** The signed-in account's requests and what each cost. Billing scopes every query by the session's account. */
export function usageRoutes(api: FastifyInstance, deps: ConsoleApiDeps) {
  const { auth, billing } = deps;
  async function keyNames(accountId: string) {
    const { keys } = await auth.listKeys({ accountId });
    return new Map(keys.map((key) => [key.keyId, key.name]));
  }

  api.get("/usage", async (request): Promise<UsagePage> => {
    const query = parseInput(UsageQuery, request.query, "query");
    const accountId = sessionOf(request).account.accountId;
    const filter = costFilter(accountId, query);
    const [page, names] = await Promise.all([
      billing.listCostRecords({ ...filter, limit: query.limit, cursor: query.cursor ?? "" }),
      keyNames(accountId),
    ]);
    return { requests: page.records.map((cost) => usageRow(cost, names)), nextCursor: page.nextCursor || null };
  });

  api.get("/usage.csv", async (request, reply) => {
    const query = parseInput(UsageQuery, request.query, "query");
    const accountId = sessionOf(request).account.accountId;
    const filter = costFilter(accountId, query);
    const names = await keyNames(accountId);
    let text = csvLine([...USAGE_COLUMNS]);
    let cursor = "";
    for (let rows = 0; rows < EXPORT_MAX_ROWS; ) {
      const page = await billing.listCostRecords({ ...filter, limit: EXPORT_PAGE, cursor });
      for (const cost of page.records) text += csvRow(usageRow(cost, names));
      rows += page.records.length;
      if (page.nextCursor === "") break;
      cursor = page.nextCursor;
    }
    return reply
      .header("content-type", "text/csv; charset=utf-8")
      .header("content-disposition", 'attachment; filename="orvado-usage.csv"')
      .send(text);
  });

  api.get<{ Params: { requestId: string } }>("/usage/:requestId", async (request): Promise<RequestDetailAnswer> => {
    const accountId = sessionOf(request).account.accountId;
    return requestDetail(request, deps, accountId, request.params.requestId, await keyNames(accountId));
  });
}
