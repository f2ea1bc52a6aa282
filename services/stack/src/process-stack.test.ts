import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { freePort, replicaName } from "./process-stack.ts";

describe("freePort", () => {
  it("hands out bindable ports below the ephemeral range, which outgoing connections never take", async () => {
    const [low] = (await readFile("/proc/sys/net/ipv4/ip_local_port_range", "utf8")).trim().split(/\s+/).map(Number);
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(1024);
      expect(port).toBeLessThan(low!);
      const server = createServer().listen(port, "127.0.0.1");
      await once(server, "listening");
      server.close();
      await once(server, "close");
    }
  });
});

describe("replicaName", () => {
  it("names the first process of a kind by the kind alone and the next ones <name>#2, #3, … (as startReplica names them)", () => {
    expect([1, 2, 3].map((n) => replicaName("generation", n))).toEqual(["generation", "generation#2", "generation#3"]);
  });
});
