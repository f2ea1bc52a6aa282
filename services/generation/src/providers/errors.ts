// Outcomes an upstream call can end in, as errors thrown through the AI SDK's call stack.

/** The upstream refused on content-policy grounds: final, never retried. */
export class UpstreamRefusal extends Error {
  override name = "UpstreamRefusal";
}

/** The upstream failed in a way we recognised ourselves (too large, blocked URL, failed prediction). */
export class UpstreamFailure extends Error {
  override name = "UpstreamFailure";
}
