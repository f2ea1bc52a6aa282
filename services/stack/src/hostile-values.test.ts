import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, BillingService } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";
import { startTestStack, TEST_ADMIN, type TestStack } from "./harness.ts";
import { signedIn, type ConsoleBrowser } from "./console-browser.ts";

// Values that once went through the edge's checks and broke further in (issue G,
// items 1 and 2), over real HTTP against the whole stack: the names of
// Object.prototype's members in every string field, numbers past the uint32 on the
// wire, and text with unpaired surrogates. Each must be a 400 in the documented error
// shape, with nothing held or charged, on /v1 and on the console's playground alike.

const PROTOTYPE_NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "CONSTRUCTOR", "__PROTO__", "ToString", "isPrototypeOf"];
const BAD_COUNTS = [0, -1, 1.5, 11, 2 ** 31, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1, 2 ** 53, 1e300, -1e300];
const ILL_FORMED = ["a\ud800b", "\udfff", "tail\ud83d", "\udc00\ud800"];

let stack: TestStack;
let billing: ReturnType<typeof internalClient<typeof BillingService>>;
let accountId: string;
let key: string;
let user: ConsoleBrowser;
let userAccountId: string;

beforeAll(async () => {
  stack = await startTestStack();
  const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  billing = internalClient(BillingService, stack.billingUrl, stack.internalSecret);
  const { account } = await auth.createAccount({ email: "hostile@example.test", password: "correct horse battery" });
  accountId = account!.accountId;
  await billing.topUp({ accountId, amountMicros: 50_000_000n, note: "hostile values" });
  key = (await auth.createKey({ accountId, name: "hostile" })).secret;
  const admin = await signedIn(stack.edgeUrl, TEST_ADMIN.email, TEST_ADMIN.password);
  const created = await admin.call("POST", "/admin/accounts", { body: { email: "playground@example.test", password: "user-password-1" } });
  userAccountId = created.body.account.id;
  await admin.call("POST", `/admin/accounts/${userAccountId}/topup`, { body: { usd: "50.00" } });
  user = await signedIn(stack.edgeUrl, "playground@example.test", "user-password-1");
});
afterAll(async () => {
  await stack?.close();
});

async function generate(body: Record<string, unknown>) {
  const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the test reads fields of a JSON answer whose shape it asserts
  return { status: response.status, body: (await response.json()) as any };
}

/** Nothing held, nothing charged, no cost record: the account is as it was topped up. */
async function expectUntouched(account: string, balanceMicros: bigint) {
  const { balance } = await billing.getBalance({ accountId: account });
  expect([balance!.balanceMicros, balance!.heldMicros]).toEqual([balanceMicros, 0n]);
  const records = await stack.db.query<{ count: bigint }>("SELECT count(*) AS count FROM billing.cost_records WHERE account_id = $1", [account]);
  expect(records.rows[0]!.count).toBe(0n);
}

function expectRefusal(answer: { status: number; body: { error?: { type?: string; code?: string; message?: string } } }, code: string, label: string) {
  expect(answer.status, label).toBe(400);
  expect(answer.body.error?.type, label).toBe("gateway_error");
  expect(answer.body.error?.code, label).toBe(code);
  expect(answer.body.error?.message, label).toMatch(/\(request id: req_[A-Za-z0-9_-]+\)$/);
}

describe("POST /v1/images/generations (real HTTP)", () => {
  it("refuses Object.prototype's names in size, response_format, model and quality, holding nothing", async () => {
    for (const name of PROTOTYPE_NAMES) {
      // alpha-2.5-flare offers 4K: a size that passed as 4K would hold the 4K price.
      expectRefusal(await generate({ model: "alpha-2.5-flare", prompt: "x", size: name }), "invalid_size", `size ${name}`);
      expectRefusal(await generate({ model: "beta", prompt: "x", response_format: name }), "invalid_field", `response_format ${name}`);
      expectRefusal(await generate({ model: name, prompt: "x" }), "unknown_model", `model ${name}`);
      expectRefusal(await generate({ model: "alpha-2.5-flare", prompt: "x", quality: name }), "invalid_field", `quality ${name}`);
    }
    await expectUntouched(accountId, 50_000_000n);
  });

  it("refuses n outside 1 to 10 (fractions, 2^32 and up, 1e300) with a message that gives the range", async () => {
    for (const n of BAD_COUNTS) {
      const answer = await generate({ model: "beta", prompt: "x", n });
      expectRefusal(answer, "invalid_field", `n ${n}`);
      expect(answer.body.error.message).toMatch(/^n must be an integer from 1 to 10/);
    }
    await expectUntouched(accountId, 50_000_000n);
  });

  it("refuses text with an unpaired UTF-16 surrogate in any field, naming the field", async () => {
    for (const text of ILL_FORMED) {
      for (const field of ["prompt", "model", "size", "quality"]) {
        const answer = await generate({ model: "beta", prompt: "x", [field]: text });
        expectRefusal(answer, "invalid_field", `${field} ${JSON.stringify(text)}`);
        expect(answer.body.error.message).toMatch(new RegExp(`^${field} is not well-formed Unicode text`));
      }
    }
    await expectUntouched(accountId, 50_000_000n);
  });
});

describe("POST /console/api/playground (real HTTP, signed in as a user)", () => {
  const play = (body: Record<string, unknown>) => user.call("POST", "/playground", { body });

  it("refuses Object.prototype's names, n past the wire's range and ill-formed text, holding nothing", async () => {
    for (const name of PROTOTYPE_NAMES) {
      expectRefusal(await play({ model: "alpha-2.5-flare", prompt: "x", size: name }), "invalid_size", `size ${name}`);
      expectRefusal(await play({ model: name, prompt: "x" }), "unknown_model", `model ${name}`);
      expectRefusal(await play({ model: "alpha-2.5-flare", prompt: "x", quality: name }), "invalid_field", `quality ${name}`);
    }
    for (const n of BAD_COUNTS) expectRefusal(await play({ model: "beta", prompt: "x", n }), "invalid_field", `n ${n}`);
    for (const text of ILL_FORMED) expectRefusal(await play({ model: "beta", prompt: text }), "invalid_field", `prompt ${JSON.stringify(text)}`);
    await expectUntouched(userAccountId, 50_000_000n);
  });
});

describe("console query strings and cursors (real HTTP, signed in as a user)", () => {
  const OUT_OF_RANGE_TIMES = ["-271821-04-20T00:00:00Z", "+275760-09-13T00:00:00Z", "275760-09-13", "-000001-01-01T00:00:00Z", "10000-01-01"];
  const BAD_WHOLE_NUMBERS = ["0", "-1", "1e1", "1e300", "0x10", " 5", "5 ", "05", "5.0", "+5", "2.5", "NaN", "Infinity", "", "4294967296", "9007199254740993", "9".repeat(400)];
  const cursorAt = (iso: string) => Buffer.from(`${iso}|req_AAAAAAAAAAAAAAAAAAAAAA`).toString("base64url");

  it("refuses out-of-range dates in from and to, on /usage and /usage.csv, with 400", async () => {
    for (const time of OUT_OF_RANGE_TIMES) {
      for (const field of ["from", "to"]) {
        for (const path of ["/usage", "/usage.csv"]) {
          const answer = await user.call("GET", `${path}?${field}=${encodeURIComponent(time)}`);
          expectRefusal(answer, "invalid_field", `${path} ${field}=${time}`);
          expect(answer.body.error.message).toContain("between the years 0001 and 9999");
        }
      }
    }
  });

  it("refuses a cursor that encodes an out-of-range date with 400", async () => {
    for (const iso of ["-271821-04-20T00:00:00.000Z", "+275760-09-13T00:00:00.000Z"]) {
      expectRefusal(await user.call("GET", `/usage?cursor=${cursorAt(iso)}`), "invalid_field", `cursor ${iso}`);
    }
  });

  it("reads whole numbers (limit, days) only in plain digits and in range", async () => {
    for (const text of BAD_WHOLE_NUMBERS) {
      expectRefusal(await user.call("GET", `/usage?limit=${encodeURIComponent(text)}`), "invalid_field", `limit ${JSON.stringify(text)}`);
      expectRefusal(await user.call("GET", `/spend?days=${encodeURIComponent(text)}`), "invalid_field", `days ${JSON.stringify(text)}`);
    }
    expect((await user.call("GET", "/usage?limit=200")).status).toBe(200);
    expect((await user.call("GET", "/spend?days=366")).status).toBe(200);
  });
});

describe("the API key header and image links (real HTTP)", () => {
  it("answers Authorization: Bearer with nothing after it as missing_api_key", async () => {
    for (const authorization of ["Bearer ", "Bearer", "bearer \t"]) {
      const response = await fetch(`${stack.edgeUrl}/v1/images/generations`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify({ model: "beta", prompt: "x" }),
      });
      expect(response.status, JSON.stringify(authorization)).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code, JSON.stringify(authorization)).toBe("missing_api_key");
    }
  });

  it("opens an image link only with expires in the canonical integer form it was signed with", async () => {
    const { status, body } = await generate({ model: "beta", prompt: "a link to spell differently" });
    expect(status).toBe(200);
    const link = new URL(body.data[0].url);
    const expires = link.searchParams.get("expires")!;
    const withExpires = (text: string) => {
      const url = new URL(link);
      url.search = `?expires=${encodeURIComponent(text)}&sig=${link.searchParams.get("sig")}`;
      return fetch(url);
    };
    expect((await withExpires(expires)).status).toBe(200);
    const respellings = [`+${expires}`, `0${expires}`, ` ${expires}`, `${expires} `, `${expires}.0`, `${Number(expires) / 10}e1`, `0x${Number(expires).toString(16)}`, `${expires}.`];
    for (const text of respellings) {
      const response = await withExpires(text);
      expect(response.status, JSON.stringify(text)).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code, JSON.stringify(text)).toBe("not_found");
    }
    const doubled = await fetch(`${link.origin}${link.pathname}?expires=${expires}&expires=${expires}&sig=${link.searchParams.get("sig")}`);
    expect(doubled.status).toBe(404);
  });
});
