import { randomBytes } from "node:crypto";

// Request ids are the only thing that guards the unauthenticated cost lookup,
// so they carry 128 random bits (the spec's floor is 96).
export function newRequestId(): string {
  return `req_${randomBytes(16).toString("base64url")}`;
}

export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString("base64url")}`;
}

const REQUEST_ID_PATTERN = /^req_[A-Za-z0-9_-]{22}$/;

export function isRequestId(text: string): boolean {
  return REQUEST_ID_PATTERN.test(text);
}
