import type { Db, Queryable } from "@orvado/db";
import { newId, type Logger } from "@orvado/core";
import { Code, ConnectError, type RpcServerOptions } from "@orvado/rpc";
import { AuthService } from "@orvado/proto";
import { accountInput, accountLimitsInput, keyInput, normaliseEmail } from "./input.ts";
import { accountMessage, keyMessage } from "./messages.ts";
import { ConsoleSessions, DEFAULT_SESSION_POLICY, type SessionPolicy } from "./sessions.ts";
import { DEFAULT_SIGN_IN_LIMITS, type SignInLimitPolicy } from "./sign-in-limit.ts";
import { displayPrefix, hashKeySecret, newKeySecret } from "./keys.ts";
import { hashPassword } from "./passwords.ts";
import {
  findAccount,
  insertAccount,
  insertKey,
  listAccounts,
  findAccountRowByEmail,
  listKeys,
  revokeKey,
  roleText,
  setAccountDisabled,
  setAccountLimits,
  type AccountRow,
} from "./store.ts";
import { KeyVerifier, type KeyVerifierOptions } from "./verify.ts";

export interface AuthServiceDeps {
  db: Db;
  logger: Logger;
  verifier?: KeyVerifierOptions;
  sessions?: SessionPolicy;
  signInLimits?: SignInLimitPolicy;
  now?: () => number;
}

/** Creates an account; null when the email is already taken. Shared by the RPC and the admin bootstrap. */
export async function createAccount(
  q: Queryable,
  input: { email: string; password: string; role: Parameters<typeof roleText>[0] },
): Promise<AccountRow | null> {
  const passwordHash = await hashPassword(input.password);
  return insertAccount(q, { accountId: newId("acct"), email: input.email, passwordHash, role: roleText(input.role) });
}

/** The routes of orvado.v1.AuthService, for startRpcServer. */
export function authRoutes(deps: AuthServiceDeps): RpcServerOptions["routes"] {
  const { db, logger } = deps;
  const now = deps.now ?? Date.now;
  const verifier = new KeyVerifier(db, logger, { now, ...deps.verifier });
  const sessions = new ConsoleSessions(db, logger, deps.sessions ?? DEFAULT_SESSION_POLICY, deps.signInLimits ?? DEFAULT_SIGN_IN_LIMITS, now);
  const accountOrNotFound = (row: AccountRow | null, accountId: string) => {
    if (!row) throw new ConnectError(`no account ${accountId}`, Code.NotFound);
    return { account: accountMessage(row) };
  };

  return (router) =>
    router.service(AuthService, {
      async createAccount(req) {
        const input = accountInput(req);
        const row = await createAccount(db, input);
        if (!row) throw new ConnectError(`an account with email ${input.email} already exists`, Code.AlreadyExists);
        logger.info({ accountId: row.account_id, role: row.role }, "account created");
        return { account: accountMessage(row) };
      },

      async getAccount(req) {
        // By id, or by email when no id is given (the CLI's --email).
        if (req.accountId === "" && req.email !== "") return accountOrNotFound(await findAccountRowByEmail(db, normaliseEmail(req.email)), req.email);
        return accountOrNotFound(req.accountId === "" ? null : await findAccount(db, req.accountId), req.accountId);
      },

      async createKey(req) {
        const input = keyInput(req, now());
        const account = await findAccount(db, input.accountId);
        if (!account) throw new ConnectError(`no account ${input.accountId}`, Code.NotFound);
        if (account.disabled) {
          throw new ConnectError(`account ${input.accountId} is disabled`, Code.FailedPrecondition);
        }
        const secret = newKeySecret();
        const row = await insertKey(db, {
          ...input,
          keyId: newId("key"),
          secretHash: hashKeySecret(secret),
          prefix: displayPrefix(secret),
        });
        logger.info({ keyId: row.key_id, accountId: row.account_id }, "api key created");
        return { key: keyMessage(row), secret };
      },

      verifyKey: (req) => verifier.verify(req.secret),

      async listKeys(req) {
        return { keys: req.accountId === "" ? [] : (await listKeys(db, req.accountId)).map(keyMessage) };
      },

      async revokeKey(req) {
        const row = req.accountId === "" || req.keyId === "" ? null : await revokeKey(db, req.accountId, req.keyId);
        // Another account's key gets the same answer as no key at all: ids must not be probed.
        if (!row) throw new ConnectError(`account ${req.accountId} has no key ${req.keyId}`, Code.NotFound);
        logger.info({ keyId: row.key_id, accountId: row.account_id }, "api key revoked");
        return { key: keyMessage(row) };
      },

      async listAccounts(req) {
        return { accounts: (await listAccounts(db, req.emailContains.slice(0, 254))).map(accountMessage) };
      },

      async setAccountDisabled(req) {
        const row = req.accountId === "" ? null : await setAccountDisabled(db, req.accountId, req.disabled);
        if (row && req.disabled) await sessions.endAll(row.account_id);
        if (row) logger.info({ accountId: row.account_id, disabled: row.disabled }, "account disabled flag set");
        return accountOrNotFound(row, req.accountId);
      },

      async setAccountLimits(req) {
        const limits = accountLimitsInput(req.limits);
        const row = req.accountId === "" ? null : await setAccountLimits(db, req.accountId, limits);
        if (row) logger.info({ accountId: row.account_id, ...limits }, "account limits set");
        return accountOrNotFound(row, req.accountId);
      },

      async signIn(req) {
        const answer = await sessions.signIn(req.email, req.password, req.clientIp);
        if (!answer.ok) return { result: { case: "refusal", value: answer.refusal } };
        return { result: { case: "signedIn", value: { sessionToken: answer.token, session: answer.session } } };
      },

      async getSession(req) {
        const answer = await sessions.get(req.sessionToken);
        return answer.ok ? { result: { case: "session", value: answer.session } } : { result: { case: "refusal", value: answer.refusal } };
      },

      async signOut(req) {
        await sessions.signOut(req.sessionToken);
        return {};
      },

      async changePassword(req) {
        const answer = await sessions.changePassword(req.sessionToken, req.currentPassword, req.newPassword);
        return answer.ok ? {} : { refusal: answer.refusal };
      },
    });
}
