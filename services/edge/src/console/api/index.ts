// The console JSON API under /console/api (docs/console.md, the contract in the
// console brief). Sessions and passwords belong to auth, money to billing, the
// catalog and generation to generation: these routes only translate and check.
import cookie from "@fastify/cookie";
import type { FastifyInstance } from "fastify";
import { ErrorCode } from "@orvado/proto";
import { sendError } from "../../reply.ts";
import type { ConsoleApiDeps } from "./deps.ts";
import { consoleErrorHandler } from "./errors.ts";
import { requireAdmin, requireSession } from "./session.ts";
import { sessionRoutes, signInRoute } from "./routes/session.ts";
import { moneyRoutes } from "./routes/money.ts";
import { keyRoutes } from "./routes/keys.ts";
import { usageRoutes } from "./routes/usage.ts";
import { playgroundRoutes } from "./routes/playground.ts";
import { modelRoutes } from "./routes/models.ts";
import { adminRoutes } from "./routes/admin.ts";
import { adminOperatorRoutes } from "./routes/admin-operator.ts";
import { adminWebhookRoutes, webhookRoutes } from "./routes/webhooks.ts";

export type { ConsoleApiDeps } from "./deps.ts";

export function consoleApiRoutes(app: FastifyInstance, deps: ConsoleApiDeps) {
  app.register(
    async (api) => {
      // Another part of the edge may have registered the cookie parser already.
      if (!api.hasRequestDecorator("cookies")) await api.register(cookie);
      // Console answers are one person's: the CSRF token (/me, sign-in), a new key's secret,
      // balances and usage. No browser or proxy cache may keep any of them, errors included.
      api.addHook("onRequest", async (_request, reply) => {
        reply.header("cache-control", "no-store");
      });
      api.setErrorHandler(consoleErrorHandler);
      api.setNotFoundHandler((request, reply) =>
        sendError(request, reply, ErrorCode.NOT_FOUND, `No console API route ${request.method} ${request.url.split("?")[0]}`),
      );
      signInRoute(api, deps);

      // Everything else needs a live session (and the CSRF header on writes)
      // before the body is even parsed.
      await api.register(async (signedIn) => {
        signedIn.addHook("onRequest", requireSession(deps.auth));
        sessionRoutes(signedIn, deps);
        moneyRoutes(signedIn, deps);
        keyRoutes(signedIn, deps);
        usageRoutes(signedIn, deps);
        playgroundRoutes(signedIn, deps);
        modelRoutes(signedIn, deps);
        webhookRoutes(signedIn, deps);
        await signedIn.register(async (admin) => {
          admin.addHook("onRequest", requireAdmin);
          adminRoutes(admin, deps);
          adminOperatorRoutes(admin, deps);
          adminWebhookRoutes(admin, deps);
        });
      });
    },
    { prefix: "/console/api" },
  );
}
