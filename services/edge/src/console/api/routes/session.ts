import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { ConsoleApiDeps } from "../deps.ts";
import { fromRefusal, parseInput } from "../errors.ts";
import { accountJson } from "../format.ts";
import { clearSessionCookie, sessionOf, sessionToken, setSessionCookie } from "../session.ts";
import type { SessionAnswer } from "../answers.ts";

const SignIn = z.strictObject({ email: z.string().max(254), password: z.string().max(1024) });
const ChangePassword = z.strictObject({ currentPassword: z.string().max(1024), newPassword: z.string().max(1024) });

/** POST /session: the one console route open without a session. */
export function signInRoute(api: FastifyInstance, { auth }: ConsoleApiDeps) {
  api.post("/session", async (request, reply): Promise<SessionAnswer> => {
    const body = parseInput(SignIn, request.body);
    const answer = await auth.signIn({ email: body.email, password: body.password, clientIp: request.ip });
    if (answer.result.case !== "signedIn") throw fromRefusal(answer.result.value);
    const { sessionToken: token, session } = answer.result.value;
    setSessionCookie(request, reply, token, Number(session!.expiresAtUnixMs));
    return { account: accountJson(session!.account!), csrfToken: session!.csrfToken };
  });
}

/** Sign-out, who am I, and the password change, for a signed-in browser. */
export function sessionRoutes(api: FastifyInstance, { auth }: ConsoleApiDeps) {
  api.delete("/session", async (request, reply) => {
    await auth.signOut({ sessionToken: sessionToken(request) });
    clearSessionCookie(request, reply);
    return reply.code(204).send();
  });

  api.get("/me", async (request): Promise<SessionAnswer> => {
    const { account, csrfToken } = sessionOf(request);
    return { account: accountJson(account), csrfToken };
  });

  api.post("/password", async (request, reply) => {
    const body = parseInput(ChangePassword, request.body);
    const answer = await auth.changePassword({
      sessionToken: sessionOf(request).token,
      currentPassword: body.currentPassword,
      newPassword: body.newPassword,
    });
    if (answer.refusal) throw fromRefusal(answer.refusal);
    return reply.code(204).send();
  });
}
