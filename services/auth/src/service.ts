import type { Db, Queryable } from "@orvado/db";
import { newId, type Logger } from "@orvado/core";
import { Code, ConnectError, type RpcServerOptions } from "@orvado/rpc";
import { AuthService, type AccountSchema, type ApiKeySchema } from "@orvado/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { accountInput, keyInput } from "./input.ts";
import { displayPrefix, hashKeySecret, newKeySecret } from "./keys.ts";
import { hashPassword } from "./passwords.ts";
import { findAccount, insertAccount, insertKey, roleText, roleValue, type AccountRow, type KeyRow } from "./store.ts";
import { KeyVerifier, type KeyVerifierOptions } from "./verify.ts";

export interface AuthServiceDeps {
  db: Db;
  logger: Logger;
  verifier?: KeyVerifierOptions;
  now?: () => number;
}

const toUnixMs = (date: Date) => BigInt(date.getTime());

function accountMessage(row: AccountRow): MessageInitShape<typeof AccountSchema> {
  return {
    accountId: row.account_id,
    email: row.email,
    role: roleValue(row.role),
    disabled: row.disabled,
    createdAtUnixMs: toUnixMs(row.created_at),
  };
}

function keyMessage(row: KeyRow): MessageInitShape<typeof ApiKeySchema> {
  return {
    keyId: row.key_id,
    accountId: row.account_id,
    name: row.name,
    ...(row.limit_micros !== null && { limitMicros: row.limit_micros }),
    ...(row.expires_at !== null && { expiresAtUnixMs: toUnixMs(row.expires_at) }),
    models: row.models,
    createdAtUnixMs: toUnixMs(row.created_at),
    prefix: row.prefix,
  };
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
        const row = req.accountId === "" ? null : await findAccount(db, req.accountId);
        if (!row) throw new ConnectError(`no account ${req.accountId}`, Code.NotFound);
        return { account: accountMessage(row) };
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
    });
}
