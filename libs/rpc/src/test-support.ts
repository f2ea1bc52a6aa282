import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { createLogger } from "@orvado/core";
import { create } from "@bufbuild/protobuf";
import { BillingService, GenerationService, GetCostResponseSchema, type GetCostRequest, type GetCostResponse } from "@orvado/proto";
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

/** What the streaming stand-in's last call saw. */
export interface SeenStream {
  context?: HandlerContext;
  /** Set once the handler's generator has ended (its finally ran). */
  closed?: boolean;
}

/**
 * A generation stand-in whose ReadImage streams `chunks` of bytes: image id
 * "count-N" streams N chunks of 1 KiB (byte i of chunk k is k), "missing" answers
 * NOT_FOUND before any message, "midway" fails after its first chunk, "hang"
 * sends its first chunk and then waits until its signal aborts.
 */
export function startGenerationStandIn(seen: SeenStream = {}, options: { readMaxBytes?: number } = {}): Promise<RpcServer> {
  return startRpcServer({
    host: "127.0.0.1",
    port: 0,
    secret: TEST_SECRET,
    serviceNames: ["orvado.v1.GenerationService"],
    logger: createLogger("test", "silent"),
    ...options,
    routes: (router) =>
      router.service(GenerationService, {
        async *readImage(request, context) {
          seen.context = context;
          seen.closed = false;
          try {
            if (request.imageId === "missing") throw new ConnectError("no such image", Code.NotFound, { "x-reason": "unknown" });
            // Tells the caller how the call came: the secret, and the host the handler saw ("in-memory" in-process).
            yield { contentType: `${context.requestHeader.get(SECRET_HEADER) === TEST_SECRET ? "secret-seen" : ""}@${new URL(context.url).host}` };
            if (request.imageId === "midway") throw new ConnectError("the disk went away", Code.Unavailable);
            if (request.imageId === "hang") {
              yield { chunk: new Uint8Array(1) };
              await new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
              return;
            }
            const count = Number(/^count-(\d+)$/.exec(request.imageId)?.[1] ?? 0);
            for (let index = 0; index < count; index += 1) {
              const chunk = new Uint8Array(1024).fill(index);
              yield { chunk };
              // The handler reuses its buffer: a caller must hold its own copy.
              chunk.fill(255);
            }
          } finally {
            seen.closed = true;
          }
        },
      }),
  });
}
