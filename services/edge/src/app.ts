import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from "fastify";
import { AuthService, BillingService, ErrorCode, GenerationService } from "@orvado/proto";
import { newRequestId, type Logger } from "@orvado/core";
import { internalClient } from "@orvado/rpc";
import type { EdgeConfig } from "./config.ts";
import { sendError } from "./reply.ts";
import { KeyChecker } from "./key-check.ts";
import { imageRoutes } from "./routes/images.ts";
import { modelRoutes } from "./routes/models.ts";
import { costRoutes } from "./routes/cost.ts";
import { fileRoutes } from "./routes/files.ts";

/** Fastify's own refusals (bad JSON, size, media type) in the spec's error shape. */
function codeForFrameworkError(error: FastifyError): ErrorCode | null {
  if (error.statusCode === 413) return ErrorCode.BODY_TOO_LARGE;
  if (error.statusCode === 415) return ErrorCode.UNSUPPORTED_MEDIA_TYPE;
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) return ErrorCode.INVALID_JSON;
  return null;
}

export function buildEdgeApp(config: EdgeConfig, logger: Logger): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    genReqId: () => newRequestId(),
    // One line per request (the onResponse hook below) instead of Fastify's two.
    logController: new LogController({ requestIdLogLabel: "requestId", disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
  });
  const auth = internalClient(AuthService, config.authUrl, config.internalSecret);
  const billing = internalClient(BillingService, config.billingUrl, config.internalSecret);
  const generation = internalClient(GenerationService, config.generationUrl, config.internalSecret);

  // Every response, success or error, carries the request id (spec 2.5); x-request-id is what SDKs read.
  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-gateway-request-id", request.id).header("x-request-id", request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.info({ method: request.method, url: request.url.split("?")[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, "request");
  });
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const code = codeForFrameworkError(error);
    if (code !== null) return sendError(request, reply, code, error.message.replace(/^Body /, "The request body "));
    request.log.error({ err: error }, "request failed");
    return sendError(request, reply, ErrorCode.INTERNAL_ERROR, "Something went wrong on our side; nothing was charged for this failure");
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, ErrorCode.NOT_FOUND, `No route ${request.method} ${request.url.split("?")[0]}`));

  app.get("/healthz", async () => ({ status: "ok" }));
  imageRoutes(app, { keys: new KeyChecker(auth, config.keyCacheMs), generation, publicUrl: config.publicUrl });
  modelRoutes(app, { generation });
  costRoutes(app, { billing });
  fileRoutes(app, { generation });
  return app;
}
