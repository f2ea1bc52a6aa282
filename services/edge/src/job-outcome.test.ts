import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@orvado/rpc";
import { jobOutcomeOrUnknown } from "./job-outcome.ts";

// Over real HTTP: a route whose job call fails in a chosen way, and what the client is told.

let app: FastifyInstance;
let base: string;
const failures = new Map<string, () => Error>([
  ["refused-before-handler", () => new ConnectError("the request message cannot be decoded", Code.InvalidArgument)],
  ["unauthenticated", () => new ConnectError("no secret", Code.Unauthenticated)],
  ["connection-cut", () => new ConnectError("stream closed", Code.Unknown)],
  ["not-connected", () => new ConnectError("connect ECONNREFUSED 127.0.0.1:1", Code.Unavailable)],
]);

beforeAll(async () => {
  app = Fastify();
  app.post<{ Params: { how: string } }>("/:how", async (request, reply) => {
    const failure = failures.get(request.params.how)!;
    const answer = await jobOutcomeOrUnknown(request, reply, "GET /lookup", () => Promise.reject(failure()));
    return answer ?? reply;
  });
  base = await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await app.close();
});

const codeOf = async (how: string) => {
  const response = await fetch(`${base}/${how}`, { method: "POST" });
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: body.error.code, retry: response.headers.get("x-should-retry") };
};

describe("jobOutcomeOrUnknown", () => {
  it("says job_outcome_unknown only when a job may exist: the call reached generation and broke", async () => {
    expect(await codeOf("connection-cut")).toEqual({ status: 502, code: "job_outcome_unknown", retry: "false" });
  });
  it("says internal_error (nothing started) when generation refused the call before its handler ran", async () => {
    expect(await codeOf("refused-before-handler")).toMatchObject({ status: 500, code: "internal_error" });
    expect(await codeOf("unauthenticated")).toMatchObject({ status: 500, code: "internal_error" });
  });
  it("says service_unavailable, retry, when the call never connected", async () => {
    expect(await codeOf("not-connected")).toEqual({ status: 503, code: "service_unavailable", retry: "true" });
  });
});
