import { describe, expect, it } from "vitest";
import { sameSite } from "./same-site.ts";

// Which hosts a channel's credentials may follow a redirect or a result URL to
// (guarded-fetch.ts): the decision itself, on URLs, with no network.

const same = (a: string, b: string) => sameSite(new URL(a), new URL(b));

describe("sameSite", () => {
  it("keeps hosts under a shared public or private suffix apart", () => {
    expect(same("https://a.herokuapp.com/x", "https://b.herokuapp.com/")).toBe(false);
    expect(same("https://x.co.uk/x", "https://y.co.uk/")).toBe(false);
    expect(same("https://evil.github.io/", "https://api.github.io/")).toBe(false);
    expect(same("https://bucket.s3.amazonaws.com/img.png", "https://other.s3.amazonaws.com/")).toBe(false);
    expect(same("https://api.example.com/", "https://api.example.org/")).toBe(false);
  });

  it("joins hosts of one registrable domain", () => {
    expect(same("https://api.us1.bfl.ai/v1/get_result", "https://api.bfl.ai/v1/")).toBe(true);
    expect(same("https://cdn.example.co.uk/a.png", "https://api.example.co.uk/")).toBe(true);
    expect(same("https://a.b.example.com/", "https://example.com/")).toBe(true);
    expect(same("https://api.example.com:8443/", "https://api.example.com/")).toBe(true);
    expect(same("https://app.herokuapp.com/img", "https://app.herokuapp.com/api")).toBe(true);
  });

  it("treats IP literals, localhost and unlisted suffixes as sites only of themselves", () => {
    expect(same("http://127.0.0.1:9000/", "http://127.0.0.1:8000/")).toBe(true);
    expect(same("http://127.0.0.2/", "http://127.0.0.1/")).toBe(false);
    expect(same("http://10.0.0.1/", "http://10.1.0.1/")).toBe(false);
    expect(same("http://[::1]/", "http://[::2]/")).toBe(false);
    expect(same("http://localhost/", "http://127.0.0.1/")).toBe(false);
    expect(same("http://a.localhost/", "http://b.localhost/")).toBe(false);
    expect(same("http://a.corp.internal/", "http://b.corp.internal/")).toBe(false);
    expect(same("http://herokuapp.com/", "http://a.herokuapp.com/")).toBe(false);
  });
});
