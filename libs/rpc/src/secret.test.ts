import { describe, expect, it } from "vitest";
import { Code, createContextValues, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { BillingService } from "@orvado/proto";
import { HEALTH_SERVICE, requireSecret, sendSecret, SECRET_HEADER } from "./secret.ts";

// The interceptors alone, no transport: a client's sendSecret chained to a
// server's requireSecret, and requireSecret on a request as it comes off a
// transport. client.test.ts checks the same over both real transports.

const SECRET = "s".repeat(32);
const method = BillingService.method.getCost;
const answered = async (): Promise<UnaryResponse> => ({ stream: false, service: BillingService, method, header: new Headers(), trailer: new Headers(), message: {} as never });

function request(header: Headers): UnaryRequest {
  return { stream: false, service: BillingService, method, requestMethod: "POST", url: "http://in-memory/x", signal: new AbortController().signal, header, contextValues: createContextValues(), message: {} as never };
}

describe("the shared secret of internal calls", () => {
  it("sendSecret puts the caller's secret in the header that requireSecret checks", async () => {
    const server = requireSecret(SECRET)(answered as never);
    const call = (callerSecret: string) => sendSecret(callerSecret)(server)(request(new Headers()) as never);
    await expect(call(SECRET)).resolves.toBeDefined();
    await expect(call("x".repeat(32))).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("requireSecret refuses a wrong or missing header, and lets health checks through without one", async () => {
    const server = requireSecret(SECRET)(answered as never);
    await expect(server(request(new Headers({ [SECRET_HEADER]: SECRET })) as never)).resolves.toBeDefined();
    await expect(server(request(new Headers({ [SECRET_HEADER]: "x".repeat(32) })) as never)).rejects.toMatchObject({ code: Code.Unauthenticated });
    await expect(server(request(new Headers()) as never)).rejects.toMatchObject({ code: Code.Unauthenticated });
    const healthCheck = { ...request(new Headers()), service: { ...BillingService, typeName: HEALTH_SERVICE } };
    await expect(server(healthCheck as never)).resolves.toBeDefined();
  });
});
