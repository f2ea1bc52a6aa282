import type { CreateImageRequest } from "@orvado/proto";
import { checkRequestFields, FIELD_LIST, FIELD_NAMES, type FieldFailure } from "./check.ts";
import type { FieldName, FieldValues, RpcName } from "./fields.ts";

// A checked body as the fields of a CreateImage call, each under its field's rpc name.

export type ImageRequestBody = Partial<Pick<CreateImageRequest, RpcName>> & Pick<CreateImageRequest, "model" | "prompt">;
/** `stream`: the client asked for text/event-stream (docs/api.md#streaming); it is the edge's, not sent to generation. */
export type BodyCheck = { ok: true; body: ImageRequestBody; stream: boolean } | FieldFailure;

export function toRpcFields(values: FieldValues): ImageRequestBody {
  const body: Record<string, unknown> = {};
  for (const [name, field] of FIELD_LIST) {
    const value = values[name] ?? field.whenAbsent;
    if (value === undefined || field.rpc === undefined) continue;
    body[field.rpc] = field.toRpc ? field.toRpc(value as never) : value;
  }
  return body as ImageRequestBody;
}

/** POST /v1/images/generations' JSON body, an edit's text fields or the console playground's body (allowed: its fields). */
export function checkImageRequestBody(body: unknown, allowed: readonly FieldName[] = FIELD_NAMES): BodyCheck {
  const checked = checkRequestFields(body, allowed);
  return checked.ok ? { ok: true, body: toRpcFields(checked.values), stream: checked.values.stream === true } : checked;
}
