import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@orvado/rpc";
import { ErrorCode, Role, type GetSessionResponse, type SignInResponse } from "@orvado/proto";
import { startTestAuth, type TestAuth } from "./testing.ts";
import { SESSION_REFUSALS } from "./sessions.ts";
import { csrfTokenFor, hashSessionToken } from "./session-tokens.ts";

// Sessions run on a clock the tests move, so idle and absolute expiry and the
// sign-in window are reached without waiting.
let clock = Date.now();
let auth: TestAuth;
const HOUR = 3_600_000;

beforeAll(async () => {
  auth = await startTestAuth({
    now: () => clock,
    config: {
      sessions: { idleMs: 12 * HOUR, maxMs: 7 * 24 * HOUR },
      signInLimits: { windowMs: 15 * 60_000, maxPerAccount: 3, maxPerIp: 5 },
    },
  });
});
afterAll(() => auth?.close());

let counter = 0;
async function newAccount(password = "password-1") {
  counter += 1;
  const email = `person${counter}@example.com`;
  const { account } = await auth.client.createAccount({ email, password, role: Role.USER });
  return { email, password, accountId: account!.accountId };
}

function signedIn(response: SignInResponse) {
  if (response.result.case !== "signedIn") throw new Error(`expected a session, got ${JSON.stringify(response.result.value?.message)}`);
  return response.result.value;
}

function refusalOf(response: SignInResponse | GetSessionResponse) {
  if (response.result.case !== "refusal") throw new Error("expected a refusal");
  return response.result.value;
}

const ip = () => `10.0.0.${counter}`;

describe("SignIn and GetSession", () => {
  it("open a session whose token is stored only as a hash, with a derived CSRF token", async () => {
    const { email, password, accountId } = await newAccount();
    const { sessionToken, session } = signedIn(await auth.client.signIn({ email: ` ${email.toUpperCase()} `, password, clientIp: ip() }));
    expect(sessionToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session?.account?.accountId).toBe(accountId);
    expect(session?.csrfToken).toBe(csrfTokenFor(sessionToken));
    expect(session?.csrfToken).not.toBe(sessionToken);
    expect(Number(session?.expiresAtUnixMs)).toBe(clock + 7 * 24 * HOUR);

    const { rows } = await auth.db.query<{ row: string; token_hash: string }>(
      "SELECT row_to_json(s)::text AS row, s.token_hash FROM auth.sessions s WHERE account_id = $1",
      [accountId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).toBe(hashSessionToken(sessionToken));
    expect(rows[0]!.row).not.toContain(sessionToken);
    expect(rows[0]!.row).not.toContain(session!.csrfToken);
    expect(rows[0]!.token_hash).not.toBe(createHash("sha256").update(sessionToken).digest("hex"));

    const read = await auth.client.getSession({ sessionToken });
    expect(read.result.case).toBe("session");
    expect(read.result.case === "session" && read.result.value.account?.email).toBe(email);
  });

  it("refuse a wrong password and an unknown email with the same answer", async () => {
    const { email } = await newAccount();
    const wrong = refusalOf(await auth.client.signIn({ email, password: "not-the-password", clientIp: ip() }));
    const unknown = refusalOf(await auth.client.signIn({ email: "nobody@example.com", password: "whatever-1", clientIp: ip() }));
    for (const refusal of [wrong, unknown]) {
      expect([refusal.code, refusal.message]).toEqual([ErrorCode.INVALID_CREDENTIALS, SESSION_REFUSALS.invalidCredentials]);
    }
  });

  it("refuse unknown, malformed and signed-out tokens as not signed in", async () => {
    const { email, password } = await newAccount();
    const { sessionToken } = signedIn(await auth.client.signIn({ email, password, clientIp: ip() }));
    await auth.client.signOut({ sessionToken });
    for (const token of [sessionToken, "", "short", "A".repeat(43)]) {
      expect(refusalOf(await auth.client.getSession({ sessionToken: token })).code).toBe(ErrorCode.NOT_SIGNED_IN);
    }
    const { rows } = await auth.db.query("SELECT 1 FROM auth.sessions WHERE token_hash = $1", [hashSessionToken(sessionToken)]);
    expect(rows).toHaveLength(0);
  });

  it("end a session after 12 idle hours, and after 7 days however busy", async () => {
    const { email, password } = await newAccount();
    const idle = signedIn(await auth.client.signIn({ email, password, clientIp: ip() })).sessionToken;
    clock += 11 * HOUR;
    expect((await auth.client.getSession({ sessionToken: idle })).result.case).toBe("session");
    clock += 11 * HOUR; // 11 h after the last use: still alive
    expect((await auth.client.getSession({ sessionToken: idle })).result.case).toBe("session");
    clock += 12 * HOUR;
    expect(refusalOf(await auth.client.getSession({ sessionToken: idle })).code).toBe(ErrorCode.NOT_SIGNED_IN);

    const busy = signedIn(await auth.client.signIn({ email, password, clientIp: ip() })).sessionToken;
    for (let use = 0; use < 15; use += 1) {
      clock += 11 * HOUR; // used every 11 hours: never idle for 12
      expect((await auth.client.getSession({ sessionToken: busy })).result.case).toBe("session");
    }
    clock += 4 * HOUR; // 169 hours after sign-in, 4 hours after the last use
    expect(refusalOf(await auth.client.getSession({ sessionToken: busy })).code).toBe(ErrorCode.NOT_SIGNED_IN);
  });

  it("refuse a disabled account at sign-in (after the password) and end its sessions", async () => {
    const { email, password, accountId } = await newAccount();
    const { sessionToken } = signedIn(await auth.client.signIn({ email, password, clientIp: ip() }));
    await auth.client.setAccountDisabled({ accountId, disabled: true });
    expect(refusalOf(await auth.client.getSession({ sessionToken })).code).toBe(ErrorCode.NOT_SIGNED_IN);
    expect(refusalOf(await auth.client.signIn({ email, password, clientIp: ip() })).code).toBe(ErrorCode.ACCOUNT_DISABLED);
    expect(refusalOf(await auth.client.signIn({ email, password: "wrong-password", clientIp: ip() })).code).toBe(
      ErrorCode.INVALID_CREDENTIALS,
    );
    await auth.client.setAccountDisabled({ accountId, disabled: false });
    expect((await auth.client.signIn({ email, password, clientIp: ip() })).result.case).toBe("signedIn");
  });
});

describe("sign-in rate limiting", () => {
  it("blocks an email after its failures, even with the right password, until the window frees a slot", async () => {
    const { email, password } = await newAccount();
    const start = clock;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      clock += 1000;
      // A different address each time: the per-account limit alone must stop this.
      expect(refusalOf(await auth.client.signIn({ email, password: "guess-0000", clientIp: `10.1.${attempt}.1` })).code).toBe(
        ErrorCode.INVALID_CREDENTIALS,
      );
    }
    const blocked = refusalOf(await auth.client.signIn({ email, password, clientIp: "10.1.9.1" }));
    expect(blocked.code).toBe(ErrorCode.TOO_MANY_ATTEMPTS);
    // The first failure (start + 1 s) ages out 15 minutes later.
    expect(blocked.retryAfterSeconds).toBe(Math.ceil((start + 1000 + 15 * 60_000 - clock) / 1000));
    clock = start + 1000 + 15 * 60_000 + 1;
    expect((await auth.client.signIn({ email, password, clientIp: "10.1.9.1" })).result.case).toBe("signedIn");
  });

  it("blocks an address after its failures across many emails", async () => {
    const address = "10.2.0.1";
    for (let attempt = 0; attempt < 5; attempt += 1) {
      await auth.client.signIn({ email: `spray${attempt}@example.com`, password: "guess-0000", clientIp: address });
    }
    const { email, password } = await newAccount();
    const blocked = refusalOf(await auth.client.signIn({ email, password, clientIp: address }));
    expect(blocked.code).toBe(ErrorCode.TOO_MANY_ATTEMPTS);
    expect(blocked.retryAfterSeconds).toBeGreaterThan(0);
    expect((await auth.client.signIn({ email, password, clientIp: "10.2.0.2" })).result.case).toBe("signedIn");
  });
});

describe("ChangePassword", () => {
  it("needs the current password, checks the new one, and ends the other sessions only", async () => {
    const { email, password } = await newAccount();
    const mine = signedIn(await auth.client.signIn({ email, password, clientIp: ip() })).sessionToken;
    const other = signedIn(await auth.client.signIn({ email, password, clientIp: ip() })).sessionToken;

    const wrong = await auth.client.changePassword({ sessionToken: mine, currentPassword: "nope-nope", newPassword: "new-password-1" });
    expect(wrong.refusal?.code).toBe(ErrorCode.INVALID_CREDENTIALS);
    const short = await auth.client.changePassword({ sessionToken: mine, currentPassword: password, newPassword: "short" }).catch((e: unknown) => e);
    expect([(short as ConnectError).code, (short as ConnectError).rawMessage]).toEqual([Code.InvalidArgument, expect.stringMatching(/at least 8/)]);

    const changed = await auth.client.changePassword({ sessionToken: mine, currentPassword: password, newPassword: "new-password-1" });
    expect(changed.refusal).toBeUndefined();
    expect((await auth.client.getSession({ sessionToken: mine })).result.case).toBe("session");
    expect(refusalOf(await auth.client.getSession({ sessionToken: other })).code).toBe(ErrorCode.NOT_SIGNED_IN);
    expect(refusalOf(await auth.client.signIn({ email, password, clientIp: ip() })).code).toBe(ErrorCode.INVALID_CREDENTIALS);
    expect((await auth.client.signIn({ email, password: "new-password-1", clientIp: ip() })).result.case).toBe("signedIn");
  });

  it("refuses without a live session", async () => {
    const answer = await auth.client.changePassword({ sessionToken: "x".repeat(43), currentPassword: "a", newPassword: "new-password-1" });
    expect(answer.refusal?.code).toBe(ErrorCode.NOT_SIGNED_IN);
  });
});
