import multipart from "@fastify/multipart";
import { compile as compileTrust } from "@fastify/proxy-addr";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from "fastify";
import { AuthService, BillingService, ErrorCode, GenerationService, WebhookService } from "@orvado/proto";
import { newRequestId, type Logger } from "@orvado/core";
import { Code, ConnectError, internalClient } from "@orvado/rpc";
import type { EdgeConfig } from "./config.ts";
import { continueOrRefuse, sendClientError, sendError, sendExpectationFailed, sendRoutingError } from "./reply.ts";
import { hostHeaderProblem } from "./host-header.ts";
import { KeyChecker } from "./key-check.ts";
import { trackExchanges } from "./exchanges.ts";
import { serverTimeBounds } from "./time-bounds.ts";
import { imageRoutes } from "./routes/images.ts";
import { imageEditRoutes } from "./routes/image-edits.ts";
import { modelRoutes } from "./routes/models.ts";
import { costRoutes } from "./routes/cost.ts";
import { fileRoutes } from "./routes/files.ts";
import { consoleStaticRoutes } from "./console/static.ts";
import { consoleApiRoutes } from "./console/api/index.ts";
import { jobRoutes } from "./routes/jobs.ts";
import { metricsRoutes } from "./routes/metrics.ts";
import { openApiRoutes } from "./openapi/routes.ts";
import { refuseIllFormedText } from "./well-formed-text.ts";

/** Fastify's own refusals (bad JSON, size, media type) in the error shape of docs/api.md#the-error-body. */
function codeForFrameworkError(error: FastifyError): ErrorCode | null {
  if (error.statusCode === 413) return ErrorCode.BODY_TOO_LARGE;
  if (error.statusCode === 415) return ErrorCode.UNSUPPORTED_MEDIA_TYPE;
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) return ErrorCode.INVALID_JSON;
  return null;
}

/**
 * request.ip is the address X-Forwarded-For names only when the connection
 * itself comes from one of our balancers (config.ts), and only the one address
 * that balancer appended: a client's own X-Forwarded-For entries are never believed.
 */
function balancerHop(trustedProxies: string[]): false | ((address: string, hop: number) => boolean) {
  if (trustedProxies.length === 0) return false;
  const isBalancer = compileTrust(trustedProxies);
  return (address, hop) => hop === 0 && isBalancer(address, hop);
}

export function buildEdgeApp(config: EdgeConfig, logger: Logger): FastifyInstance {
  const bounds = serverTimeBounds(config);
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    genReqId: () => newRequestId(),
    // One line per request (the onResponse hook below) instead of Fastify's two.
    logController: new LogController({ requestIdLogLabel: "requestId", disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    ...bounds,
    // The edge checks the Host header itself, in the error shape (host-header.ts).
    http: { ...bounds.http, requireHostHeader: false },
    return503OnClosing: true,
    trustProxy: balancerHop(config.trustedProxies),
    // What Fastify and Node refuse before any route or hook, in the same error shape too.
    frameworkErrors: sendRoutingError,
    clientErrorHandler: sendClientError,
  });
  // So that sendClientError knows which request a refusal is that of, and whether it was answered.
  trackExchanges(app.server);
  app.server.on("checkExpectation", sendExpectationFailed);
  app.server.on("checkContinue", (request, response) => continueOrRefuse(app.server, request, response));
  const rpc = { transport: config.rpcTransport };
  const auth = internalClient(AuthService, config.authUrls, config.internalSecret, rpc);
  const billing = internalClient(BillingService, config.billingUrls, config.internalSecret, rpc);
  const generation = internalClient(GenerationService, config.generationUrls, config.internalSecret, rpc);
  const webhooks = internalClient(WebhookService, config.generationUrls, config.internalSecret, rpc);

  // Every response, success or error, carries the request id (docs/api.md#headers); x-request-id is what SDKs read.
  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-gateway-request-id", request.id).header("x-request-id", request.id);
    const hostProblem = hostHeaderProblem(request.raw);
    if (hostProblem) return sendError(request, reply, ErrorCode.INVALID_REQUEST, hostProblem);
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.info({ method: request.method, url: request.url.split("?")[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, "request");
  });
  // Before any route reads a body or query: text that cannot be UTF-8 never reaches a service.
  app.addHook("preValidation", refuseIllFormedText);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const code = codeForFrameworkError(error);
    if (code !== null) return sendError(request, reply, code, error.message.replace(/^Body /, "The request body "));
    const unavailable = (error as unknown) instanceof ConnectError && [Code.Unavailable, Code.DeadlineExceeded].includes((error as unknown as ConnectError).code);
    if (unavailable) {
      // A service behind the edge is restarting or unreachable: a read can simply be tried again.
      request.log.warn({ err: error }, "a service behind the edge is unavailable");
      reply.header("retry-after", "5").header("x-should-retry", "true");
      return sendError(request, reply, ErrorCode.SERVICE_UNAVAILABLE, "A service behind the gateway is briefly unavailable; retry in a few seconds");
    }
    request.log.error({ err: error }, "request failed");
    return sendError(request, reply, ErrorCode.INTERNAL_ERROR, "Something went wrong on our side; nothing was charged for this failure");
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, ErrorCode.NOT_FOUND, `No route ${request.method} ${request.url.split("?")[0]}`));

  app.get("/healthz", async () => ({ status: "ok" }));
  // A browser opening the bare address wants the console; API clients get the usual 404.
  app.get("/", async (request, reply) =>
    String(request.headers.accept ?? "").includes("text/html")
      ? reply.redirect("/console", 302)
      : sendError(request, reply, ErrorCode.NOT_FOUND, "No route GET /; the API is under /v1 and the console under /console"),
  );
  metricsRoutes(app, { generation });
  const keys = new KeyChecker(auth, config.keyCacheMs, Date.now, (error) => app.log.warn({ err: error }, "auth could not check a key; its requests are answered 503"));
  imageRoutes(app, { keys, generation, publicUrl: config.publicUrl, heartbeatMs: config.streamHeartbeatMs });
  // Parses nothing by itself: the edit route reads its parts as they stream, within its own bounds.
  app.register(multipart);
  imageEditRoutes(app, { keys, generation, publicUrl: config.publicUrl, limits: config.edits, heartbeatMs: config.streamHeartbeatMs });
  jobRoutes(app, { keys, generation, billing, publicUrl: config.publicUrl });
  modelRoutes(app, { generation });
  costRoutes(app, { billing });
  fileRoutes(app, { generation });
  openApiRoutes(app);
  consoleStaticRoutes(app, { publicUrl: config.publicUrl });
  consoleApiRoutes(app, { auth, billing, generation, webhooks, heartbeatMs: config.streamHeartbeatMs, ...(config.publicUrl && { publicUrl: config.publicUrl }) });
  return app;
}
