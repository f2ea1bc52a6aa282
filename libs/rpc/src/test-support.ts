import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { createLogger } from "@orvado/core";
import { create } from "@bufbuild/protobuf";
import { BillingService, GetCostResponseSchema, type GetCostRequest, type GetCostResponse } from "@orvado/proto";
import { startRpcServer, type RpcServer } from "./server.ts";
import { SECRET_HEADER } from "./secret.ts";

export const TEST_SECRET = "s".repeat(32);

/** What the stand-in's last call saw and answered. */
export interface SeenCall {
  request?: GetCostRequest;
  context?: HandlerContext;
  answer?: GetCostResponse;
}

/**
 * A billing stand-in whose GetCost tells the caller how the call came: the
 * request id comes back with the host the handler saw ("in-memory" for an
 * in-process call), and model "secret-seen" when the shared secret arrived.
 * Request ids "missing", "hang" and "crash" answer NOT_FOUND (with metadata),
 * never, and with a plain TypeError.
 */
export function startBillingStandIn(seen: SeenCall = {}, options: { readMaxBytes?: number } = {}): Promise<RpcServer> {
  return startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: TEST_SECRET,
    serviceNames: ["orvado.v1.BillingService"],
    logger: createLogger("test", "silent"),
    ...options,
    routes: (router) =>
      router.service(BillingService, {
        async getCost(request, context) {
          seen.request = request;
          seen.context = context;
          if (request.requestId === "missing") throw new ConnectError("no such request", Code.NotFound, { "x-reason": "unknown" });
          if (request.requestId === "hang") return new Promise<never>(() => {});
          if (request.requestId === "crash") throw new TypeError("handler bug");
          context.responseHeader.set("x-answered-by", "billing");
          const model = context.requestHeader.get(SECRET_HEADER) === TEST_SECRET ? "secret-seen" : "";
          // A complete message (create fills the defaults): a call over the network serializes it.
          seen.answer = create(GetCostResponseSchema, {
            cost: { requestId: `${request.requestId}@${new URL(context.url).host}`, model, amountMicros: 20_000n },
          });
          return seen.answer;
        },
      }),
  });
}
