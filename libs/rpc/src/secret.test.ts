import { describe, expect, it } from "vitest";
import { Code, createContextValues, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { BillingService } from "@orvado/proto";
import { requireSecret, sendSecret, SECRET_HEADER } from "./secret.ts";

// The interceptors alone, chained as a client and a server in one process chain
// them (direct-transport.ts: the server gets the client's context values), or as
// a server off the network does (fresh context values, only the header).
// in-process.test.ts and unary-server.test.ts check the same over real calls.

const SECRET = "s".repeat(32);
const method = BillingService.method.getCost;
const answered = async (): Promise<UnaryResponse> => ({ stream: false, service: BillingService, method, header: new Headers(), trailer: new Headers(), message: {} as never });

function request(header: Headers, contextValues = createContextValues()): UnaryRequest {
  return { stream: false, service: BillingService, method, requestMethod: "POST", url: "http://in-memory/x", signal: new AbortController().signal, header, contextValues, message: {} as never };
}

/** A call through sendSecret(callerSecret), then `tamper` (another client interceptor), then the server's requireSecret. */
function inProcessCall(callerSecret: string, tamper: (req: UnaryRequest) => void = () => {}) {
  const server = requireSecret(SECRET)(answered as never);
  const client = sendSecret(callerSecret)(((req: UnaryRequest) => {
    tamper(req);
    return server(req as never);
  }) as never);
  return client(request(new Headers()) as never);
}

describe("the shared secret of internal calls", () => {
  it("in-process: the caller's own secret decides, compared as digests", async () => {
    await expect(inProcessCall(SECRET)).resolves.toBeDefined();
    await expect(inProcessCall("x".repeat(32))).rejects.toMatchObject({ code: Code.Unauthenticated });
    // A header changed on the way does not stand in for the caller's secret.
    await expect(inProcessCall("x".repeat(32), (req) => req.header.set(SECRET_HEADER, SECRET))).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("off the network: the header is checked (the server's context values are its own)", async () => {
    const server = requireSecret(SECRET)(answered as never);
    await expect(server(request(new Headers({ [SECRET_HEADER]: SECRET })) as never)).resolves.toBeDefined();
    await expect(server(request(new Headers({ [SECRET_HEADER]: "x".repeat(32) })) as never)).rejects.toMatchObject({ code: Code.Unauthenticated });
    await expect(server(request(new Headers()) as never)).rejects.toMatchObject({ code: Code.Unauthenticated });
  });
});
