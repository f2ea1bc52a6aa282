import { describe, expect, it } from "vitest";
import { checkWebhookUrl, WebhookUrlError } from "./endpoint-url.ts";

// The endpoint URL check, with real name resolution (localhost) and no network traffic.
describe("checkWebhookUrl", () => {
  const refused = async (url: string, allowPrivate = false) => {
    const error = await checkWebhookUrl(url, allowPrivate).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WebhookUrlError);
    return (error as Error).message;
  };

  it("refuses loopback, private, link-local and unspecified addresses, by literal or by name", async () => {
    for (const url of ["http://127.0.0.1/", "https://10.0.0.8/", "http://192.168.1.1/", "http://172.20.0.1/", "http://169.254.169.254/", "http://0.0.0.0/", "http://[::1]/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/", "http://localhost:3000/"]) {
      expect(await refused(url)).toContain("internal address");
    }
  });

  it("refuses other schemes, credentials, non-URLs, overlong and ill-formed text", async () => {
    expect(await refused("ftp://93.184.215.14/")).toContain("https or http");
    expect(await refused("file:///etc/passwd")).toContain("https or http");
    expect(await refused("https://a:b@93.184.215.14/")).toContain("credentials");
    expect(await refused("/relative")).toContain("absolute URL");
    expect(await refused("")).toContain("required");
    expect(await refused(`https://93.184.215.14/${"x".repeat(2048)}`)).toContain("longer than");
    expect(await refused("https://93.184.215.14/\ud800")).toContain("well-formed");
    expect(await refused("https://no-such-host.invalid/")).toContain("does not resolve");
  });

  it("accepts a public address, and a private one only when allowed", async () => {
    expect(await checkWebhookUrl("https://93.184.215.14/hook?x=1", false)).toBe("https://93.184.215.14/hook?x=1");
    expect(await checkWebhookUrl("http://127.0.0.1:8080/hook", true)).toBe("http://127.0.0.1:8080/hook");
    expect(await refused("http://u:p@127.0.0.1/", true)).toContain("credentials");
  });
});
