import { describe, expect, it } from "vitest";
import { ErrorCode } from "@orvado/proto";
import { codeText, errorBody, httpStatusFor } from "./errors.ts";

describe("error codes", () => {
  it("map the documented statuses", () => {
    expect(httpStatusFor(ErrorCode.INVALID_SIZE)).toBe(400);
    expect(httpStatusFor(ErrorCode.MISSING_API_KEY)).toBe(401);
    expect(httpStatusFor(ErrorCode.INSUFFICIENT_USER_QUOTA)).toBe(403);
    expect(httpStatusFor(ErrorCode.ASYNC_IMAGE_FAILED)).toBe(502);
    expect(httpStatusFor(ErrorCode.NO_CAPACITY)).toBe(503);
  });
  it("give every code a status", () => {
    for (const value of Object.values(ErrorCode)) {
      if (typeof value === "number") expect(httpStatusFor(value)).toBeGreaterThanOrEqual(400);
    }
  });
  it("build the documented body with the request id at the end", () => {
    expect(errorBody(ErrorCode.INSUFFICIENT_USER_QUOTA, "Not enough balance", "req_x")).toEqual({
      error: { message: "Not enough balance (request id: req_x)", type: "gateway_error", code: "insufficient_user_quota" },
    });
    expect(codeText(ErrorCode.ASYNC_IMAGE_FAILED)).toBe("async_image_failed");
  });
});
