// Pure: reads sampling heap profiles written to a temporary folder; no network.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { liveBytes, perJob } from "./live-memory.ts";

const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0, columnNumber: 0, scriptId: "0" });
const node = (callFrame: ReturnType<typeof frame>, selfSize: number, children: unknown[] = []) => ({ callFrame, selfSize, children, id: 0 });

/** A profile where our upstream call's socket (allocated in Node's core) and Connect's handler each keep `bytes`. */
function profile(bytes: number) {
  const socket = node(frame("Socket", "node:net"), bytes);
  const upstreamCall = node(frame("requestOnce", "file:///srv/services/generation/dist/main.mjs"), 0, [socket]);
  const handler = node(frame("createHandlerContext", "file:///srv/node_modules/@connectrpc/connect/dist/esm/implementation.js"), bytes);
  return { head: node(frame("(root)", ""), 0, [upstreamCall, handler]), samples: [] };
}

function write(dir: string, name: string, bytes: number): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(profile(bytes)));
  return path;
}

describe("live memory per held job", () => {
  const dir = mkdtempSync(join(tmpdir(), "live-memory-"));

  it("charges an allocation in Node's core to the code that called it", () => {
    const { byOwner, total } = liveBytes(write(dir, "one.heapprofile", 1000));
    expect(byOwner.get("services/generation")).toBe(1000);
    expect(byOwner.get("@connectrpc/connect")).toBe(1000);
    expect(total).toBe(2000);
  });

  it("divides what the held profile has beyond the idle one by the jobs held", () => {
    const idle = liveBytes(write(dir, "idle.heapprofile", 1000));
    const held = liveBytes(write(dir, "held.heapprofile", 9000));
    expect(perJob(held.byOwner, idle.byOwner, 4)).toEqual([
      ["services/generation", 2000],
      ["@connectrpc/connect", 2000],
    ]);
  });
});
