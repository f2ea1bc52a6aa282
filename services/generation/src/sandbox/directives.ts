// Prompt directives let users rehearse the unhappy paths (refusal, failure, a
// slow model) against the sandbox without any upstream.

export type SandboxDirective = { kind: "refuse" } | { kind: "fail" } | { kind: "delay"; ms: number };

/** The 10-minute per-job ceiling (docs/api.md#how-long-a-call-takes): a longer sandbox delay could only ever time out. */
export const MAX_SANDBOX_DELAY_MS = 600_000;

// Only well-formed directives match; anything else, such as `[sandbox:delay=abc]`,
// stays ordinary prompt text.
const DIRECTIVE_PATTERN = /\[sandbox:(?:(refuse)|(fail)|delay=(\d+))\]/gi;

/** Directives in the order they appear in the prompt. */
export function parseSandboxDirectives(prompt: string): SandboxDirective[] {
  const directives: SandboxDirective[] = [];
  for (const match of prompt.matchAll(DIRECTIVE_PATTERN)) {
    const [, refuse, fail, delayDigits] = match;
    if (refuse !== undefined) directives.push({ kind: "refuse" });
    else if (fail !== undefined) directives.push({ kind: "fail" });
    else if (delayDigits !== undefined) {
      directives.push({ kind: "delay", ms: Math.min(Number(delayDigits), MAX_SANDBOX_DELAY_MS) });
    }
  }
  return directives;
}
