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

describe("freePort across vitest workers", () => {
  it("never hands out a port twice in one process, and gives two workers ports from shares apart", async () => {
    const own = process.env.VITEST_POOL_ID;
    const portsOf = async (pool: string) => {
      process.env.VITEST_POOL_ID = pool;
      return Promise.all(Array.from({ length: 30 }, () => freePort()));
    };
    try {
      const [third, fourth] = [await portsOf("3"), await portsOf("4")];
      expect(new Set([...third, ...fourth]).size).toBe(60);
      expect(Math.max(...third)).toBeLessThan(Math.min(...fourth));
    } finally {
      if (own === undefined) delete process.env.VITEST_POOL_ID;
      else process.env.VITEST_POOL_ID = own;
    }
  });
});

describe("replicaName", () => {
  it("names the first process of a kind by the kind alone and the next ones <name>#2, #3, … (as startReplica names them)", () => {
    expect([1, 2, 3].map((n) => replicaName("generation", n))).toEqual(["generation", "generation#2", "generation#3"]);
  });
});
