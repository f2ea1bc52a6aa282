// Prompt directives steer a simulator per request, so a benchmark or a fault test
// that only controls the prompt (through the whole stack) can still pick the outcome.

/**
 * fail-mid-stream and refuse-mid-stream end a streamed answer (OpenAI's `stream: true`) with an
 * error event after its first partial image; an answer that is not streamed ignores them.
 */
export type SimMode = "ok" | "refuse" | "fail" | "malformed" | "hang" | "slow-poll" | "fail-mid-stream" | "refuse-mid-stream";

export interface PromptDirectives {
  mode?: SimMode;
  delayMs?: number;
  /** Deliver the image at this size instead of the one asked for, to exercise resizing. */
  size?: { width: number; height: number };
}

const PATTERN = /\[sim:(?:(refuse-mid-stream|fail-mid-stream|refuse|fail|malformed|hang|slow-poll|ok)|delay=(\d{1,7})|size=(\d{2,4})x(\d{2,4}))\]/gi;
const MAX_DELAY_MS = 900_000;

export function parsePromptDirectives(prompt: string): PromptDirectives {
  const found: PromptDirectives = {};
  for (const [, mode, delay, width, height] of prompt.matchAll(PATTERN)) {
    if (mode) found.mode = mode.toLowerCase() as SimMode;
    else if (delay) found.delayMs = Math.min(Number(delay), MAX_DELAY_MS);
    else if (width && height) found.size = { width: Number(width), height: Number(height) };
  }
  return found;
}
