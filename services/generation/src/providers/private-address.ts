import { BlockList, isIP } from "node:net";
import { lookup } from "node:dns/promises";

// SSRF guard for URLs an upstream hands us (result images, polling URLs): their host is
// resolved, and a URL reaching loopback, private, link-local or otherwise internal
// addresses is refused, so an upstream (or whoever controls its answer) cannot make the
// gateway fetch from inside its own network.

const blocked = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(network, prefix, "ipv6");
}

export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return isInternalAddress(mapped[1]!);
  const family = isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family === 6) return blocked.check(address, "ipv6");
  return true;
}

export class BlockedUrlError extends Error {
  override name = "BlockedUrlError";
}

/** Throws BlockedUrlError unless every address the URL's host resolves to is public. */
export async function assertPublicUrl(url: URL): Promise<void> {
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new BlockedUrlError(`refused to fetch a ${url.protocol} URL from an upstream`);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
  const internal = addresses.find(isInternalAddress);
  if (addresses.length === 0 || internal !== undefined) {
    throw new BlockedUrlError(`refused to fetch ${url.origin}: it resolves to the internal address ${internal ?? "(none)"}`);
  }
}
