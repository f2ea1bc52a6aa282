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

export const asRecord = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

export const count = (value: unknown, fallback = 1, max = 10): number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 ? Math.min(value, max) : fallback;

export const bearer = (header: string | string[] | undefined): string | undefined => {
  const text = Array.isArray(header) ? header[0] : header;
  return text?.replace(/^(Bearer|Key)\s+/i, "");
};
