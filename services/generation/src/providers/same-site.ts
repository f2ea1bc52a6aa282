import { parse } from "tldts";

// Whether two upstream URLs belong to one site, so a channel's credentials may go to
// both (api.bfl.ai and api.us1.bfl.ai). A site is a registrable domain by the Public
// Suffix List, private suffixes included: a.herokuapp.com and b.herokuapp.com are two
// sites, as are x.co.uk and y.co.uk. A host with no registrable domain (an IP
// literal, localhost, a bare public suffix, a name under a suffix the list does not
// know, such as .internal) is a site only of itself.

/** The registrable domain of a URL host, or null when it has none. */
function registrableDomain(hostname: string): string | null {
  const parsed = parse(hostname, { allowPrivateDomains: true });
  if (parsed.isIp || (!parsed.isIcann && !parsed.isPrivate)) return null;
  return parsed.domain;
}

export function sameSite(url: URL, base: URL): boolean {
  if (url.hostname === base.hostname) return true;
  const domain = registrableDomain(url.hostname);
  return domain !== null && domain === registrableDomain(base.hostname);
}
