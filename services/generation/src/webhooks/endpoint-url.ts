import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isInternalAddress } from "../providers/private-address.ts";

// An endpoint URL is checked like an upstream's: a client must not make the gateway
// call into its own network. This check answers the account holder at once; the
// sender checks the address again where the connection is made (sender.ts, through
// pinned-fetch.ts), so a name that resolves elsewhere later (DNS rebinding) is refused then.

export const MAX_URL_LENGTH = 2048;

/** With the u flag an unpaired UTF-16 surrogate is one code point of category Cs. */
const UNPAIRED_SURROGATE = /\p{Cs}/u;

export class WebhookUrlError extends Error {}

/** The URL as it will be called, or a WebhookUrlError saying what is wrong with it. */
export async function checkWebhookUrl(text: string, allowPrivate: boolean): Promise<string> {
  if (text.length === 0) throw new WebhookUrlError("url is required");
  if (text.length > MAX_URL_LENGTH) throw new WebhookUrlError(`url is longer than ${MAX_URL_LENGTH} characters`);
  if (UNPAIRED_SURROGATE.test(text)) throw new WebhookUrlError("url is not well-formed Unicode");
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebhookUrlError("url is not an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new WebhookUrlError("url must be an https or http URL");
  if (url.username !== "" || url.password !== "") throw new WebhookUrlError("url must not carry credentials");
  if (!allowPrivate) await checkPublicHost(url.hostname.replace(/^\[|\]$/g, ""));
  return url.href;
}

async function checkPublicHost(host: string): Promise<void> {
  const addresses = isIP(host) ? [host] : await resolve(host);
  const internal = addresses.find((address) => isInternalAddress(address));
  if (internal !== undefined) {
    throw new WebhookUrlError(`url must reach a public address: ${host} ${internal === host ? "is" : "resolves to"} the internal address ${internal}`);
  }
}

async function resolve(host: string): Promise<string[]> {
  try {
    const found = await lookup(host, { all: true, verbatim: true });
    if (found.length === 0) throw new Error("no address");
    return found.map((entry) => entry.address);
  } catch {
    throw new WebhookUrlError(`url's host ${host} does not resolve`);
  }
}
