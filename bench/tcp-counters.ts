import { readFileSync } from "node:fs";

// The kernel's TCP counters that tell whether clients met a full accept queue
// (docs/performance.md#what-happens-at-the-peak). They count for the whole network
// namespace, every listener and every process in it, so a run's figure is the
// difference between a reading before the load and one after, with nothing else
// of size running meanwhile.

export interface TcpCounters {
  /** Handshakes completed while a listener's accept queue was full (TcpExt ListenOverflows). */
  listenOverflows: number;
  /** Connections dropped at a listener for any reason, overflows included (TcpExt ListenDrops). */
  listenDrops: number;
  /** Segments sent with RST set (Tcp OutRsts). */
  resetsSent: number;
}

/** `Proto: name name …` followed by `Proto: value value …`, as /proc/net/netstat and /proc/net/snmp print them. */
export function protocolCounters(text: string, protocol: string): Map<string, number> {
  const lines = text.split("\n").filter((line) => line.startsWith(`${protocol}: `));
  const counters = new Map<string, number>();
  if (lines.length < 2) return counters;
  const names = lines[0]!.split(/\s+/).slice(1);
  const values = lines[1]!.split(/\s+/).slice(1);
  names.forEach((name, index) => counters.set(name, Number(values[index])));
  return counters;
}

/** The counters now, or null where /proc/net cannot be read (not Linux). */
export function readTcpCounters(): TcpCounters | null {
  try {
    const ext = protocolCounters(readFileSync("/proc/net/netstat", "utf8"), "TcpExt");
    const tcp = protocolCounters(readFileSync("/proc/net/snmp", "utf8"), "Tcp");
    return { listenOverflows: ext.get("ListenOverflows") ?? 0, listenDrops: ext.get("ListenDrops") ?? 0, resetsSent: tcp.get("OutRsts") ?? 0 };
  } catch {
    return null;
  }
}

/** What the counters rose by between two readings. */
export function tcpCountersSince(before: TcpCounters | null, after: TcpCounters | null): TcpCounters | null {
  if (!before || !after) return null;
  return {
    listenOverflows: after.listenOverflows - before.listenOverflows,
    listenDrops: after.listenDrops - before.listenDrops,
    resetsSent: after.resetsSent - before.resetsSent,
  };
}
