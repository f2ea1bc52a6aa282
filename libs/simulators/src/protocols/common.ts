import type { Effective, SimReply, SimRequest, SimulatorCore } from "../server.ts";
import { malformedReply } from "../server.ts";

// The unhappy paths every synchronous protocol shares; each protocol supplies its
// own refusal and failure bodies, because that is where the real APIs differ.

export interface SyncFaults {
  refusal(): SimReply;
  failure(status: number): SimReply;
}

/** Waits the model's latency, then answers a fault, or null when the image should be made. */
export async function syncFault(sim: SimulatorCore, req: SimRequest, effective: Effective, faults: SyncFaults): Promise<SimReply | null> {
  if (effective.mode === "hang") return { hang: true };
  await sim.wait(effective.delayMs, req);
  switch (effective.mode) {
    case "refuse":
      return faults.refusal();
    case "fail":
      return faults.failure(sim.behaviour.failStatus);
    case "malformed":
      return malformedReply();
    default:
      return null;
  }
}

/** Counts the input images a JSON protocol received under the given keys (strings or lists of them). */
export function inputCount(body: Record<string, unknown>, keys: string[]): number {
  return keys.reduce((sum, key) => {
    const value = body[key];
    return sum + (Array.isArray(value) ? value.filter((item) => typeof item === "string").length : typeof value === "string" ? 1 : 0);
  }, 0);
}

/** Records an edit's inputs when the request carried any. */
export function noteInputs(sim: SimulatorCore, images: number, mask: unknown): void {
  if (images > 0 || typeof mask === "string") sim.sawInputs(images, typeof mask === "string");
}

export const asRecord = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

export const count = (value: unknown, fallback = 1, max = 10): number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 ? Math.min(value, max) : fallback;

export const bearer = (header: string | string[] | undefined): string | undefined => {
  const text = Array.isArray(header) ? header[0] : header;
  return text?.replace(/^(Bearer|Key)\s+/i, "");
};
