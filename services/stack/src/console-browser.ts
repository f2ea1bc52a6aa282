// A minimal browser for the console API tests: real HTTP, one session cookie,
// and the CSRF header sent on writes unless a test says otherwise.

export interface ConsoleAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read fields of this JSON answer, whose shape each asserts
  body: any;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** The x-csrf-token to send: the session's by default, null for none. */
  csrf?: string | null;
  cookie?: string | null;
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export class ConsoleBrowser {
  cookie: string | null = null;
  csrfToken: string | null = null;
  /** The raw session token from the last Set-Cookie (the tests look for it in the database). */
  sessionToken: string | null = null;

  constructor(readonly edgeUrl: string) {}

  async signIn(email: string, password: string): Promise<ConsoleAnswer> {
    const answer = await this.call("POST", "/session", { body: { email, password }, csrf: null });
    if (answer.status === 200) this.csrfToken = answer.body.csrfToken;
    return answer;
  }

  async call(method: string, path: string, options: CallOptions = {}): Promise<ConsoleAnswer> {
    const headers: Record<string, string> = {};
    const cookie = options.cookie === undefined ? this.cookie : options.cookie;
    if (cookie) headers.cookie = cookie;
    const csrf = options.csrf === undefined ? this.csrfToken : options.csrf;
    if (WRITES.has(method) && csrf) headers["x-csrf-token"] = csrf;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${this.edgeUrl}/console/api${path}`, {
      method,
      headers,
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    });
    this.#readCookie(response.headers);
    const text = await response.text();
    let body: unknown = null;
    if ((response.headers.get("content-type") ?? "").includes("json") && text !== "") body = JSON.parse(text);
    return { status: response.status, headers: response.headers, body, text };
  }

  #readCookie(headers: Headers) {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(";");
      const [name, value] = pair!.split("=");
      if (name !== "orvado_session") continue;
      const cleared = value === "" || /expires=Thu, 01 Jan 1970/i.test(line);
      this.cookie = cleared ? null : `orvado_session=${value}`;
      this.sessionToken = cleared ? null : decodeURIComponent(value!);
    }
  }
}

/** A browser signed in as email, failing the test if it could not. */
export async function signedIn(edgeUrl: string, email: string, password: string): Promise<ConsoleBrowser> {
  const browser = new ConsoleBrowser(edgeUrl);
  const answer = await browser.signIn(email, password);
  if (answer.status !== 200) throw new Error(`sign-in as ${email} failed: ${answer.status} ${answer.text}`);
  return browser;
}
