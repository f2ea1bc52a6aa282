import { ErrorCode, type Refusal } from "@orvado/proto";

// The one mapping from an error code to its HTTP status and its `code` text.

const STATUS: Record<ErrorCode, number> = {
  [ErrorCode.UNSPECIFIED]: 500,
  [ErrorCode.INVALID_REQUEST]: 400,
  [ErrorCode.INVALID_JSON]: 400,
  [ErrorCode.MISSING_FIELD]: 400,
  [ErrorCode.UNKNOWN_FIELD]: 400,
  [ErrorCode.INVALID_FIELD]: 400,
  [ErrorCode.UNKNOWN_MODEL]: 400,
  [ErrorCode.INVALID_SIZE]: 400,
  [ErrorCode.TIER_NOT_OFFERED]: 400,
  [ErrorCode.EDITS_NOT_AVAILABLE]: 400,
  [ErrorCode.BODY_TOO_LARGE]: 413,
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCode.MISSING_API_KEY]: 401,
  [ErrorCode.INVALID_API_KEY]: 401,
  [ErrorCode.INSUFFICIENT_USER_QUOTA]: 403,
  [ErrorCode.MODEL_NOT_ALLOWED]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.METHOD_NOT_ALLOWED]: 405,
  [ErrorCode.LINK_EXPIRED]: 410,
  [ErrorCode.IDEMPOTENCY_KEY_REUSED]: 409,
  [ErrorCode.ASYNC_IMAGE_FAILED]: 502,
  [ErrorCode.NO_CAPACITY]: 503,
  [ErrorCode.INTERNAL_ERROR]: 500,
  [ErrorCode.INVALID_CREDENTIALS]: 401,
  [ErrorCode.NOT_SIGNED_IN]: 401,
  [ErrorCode.ACCOUNT_DISABLED]: 403,
  [ErrorCode.CSRF_FAILED]: 403,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.ACCOUNT_EXISTS]: 409,
  [ErrorCode.TOO_MANY_ATTEMPTS]: 429,
  [ErrorCode.SERVICE_UNAVAILABLE]: 503,
  [ErrorCode.JOB_OUTCOME_UNKNOWN]: 502,
  [ErrorCode.CONCURRENT_JOB_LIMIT]: 429,
  [ErrorCode.RATE_LIMIT_EXCEEDED]: 429,
};

export function httpStatusFor(code: ErrorCode): number {
  return STATUS[code] ?? 500;
}

/** ERROR_CODE_INSUFFICIENT_USER_QUOTA -> "insufficient_user_quota" */
export function codeText(code: ErrorCode): string {
  const name = ErrorCode[code] ?? "INTERNAL_ERROR";
  return name.toLowerCase();
}

export interface ErrorBody {
  error: { message: string; type: "gateway_error"; code: string };
}

/** The error body (docs/api.md#the-error-body), its message ending with the request id. */
export function errorBody(code: ErrorCode, message: string, requestId: string): ErrorBody {
  return {
    error: { message: `${message} (request id: ${requestId})`, type: "gateway_error", code: codeText(code) },
  };
}

export function refusal(code: ErrorCode, message: string, extra: Partial<Pick<Refusal, "retryAfterSeconds" | "shouldRetry">> = {}) {
  return { code, message, retryAfterSeconds: extra.retryAfterSeconds ?? 0, shouldRetry: extra.shouldRetry ?? false };
}
