// The Prefer request header (RFC 7240, section 2):
//   Prefer     = 1#preference
//   preference = token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] )
//   parameter  = token [ BWS "=" BWS word ]
//   word       = token / quoted-string
// A client may send several preferences, in one header or in several (Node joins them with
// ", "). Preference names are case-insensitive; a preference the server does not know, or one
// it cannot parse, is ignored, and only the first of a repeated preference counts. The edge
// applies one, `respond-async` (docs/api.md#async-submit).

/** RFC 9110 token characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The text split at `separator`, except inside quoted strings (where a backslash escapes the next character). */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = "";
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (quoted && char === "\\" && index + 1 < text.length) {
      current += char + text[++index];
      continue;
    }
    if (char === '"') quoted = !quoted;
    if (char === separator && !quoted) {
      parts.push(current);
      current = "";
    } else current += char;
  }
  parts.push(current);
  return parts;
}

/** A word's value: a quoted string without its quotes and escapes, or the token as sent. */
function wordValue(word: string): string {
  if (word.length >= 2 && word.startsWith('"') && word.endsWith('"')) return word.slice(1, -1).replace(/\\(.)/g, "$1");
  return word;
}

/**
 * The preferences of a request's Prefer header(s): lower-cased name → value ("" when it has none).
 * Parameters after `;` are not kept: no preference the edge applies takes any.
 */
export function parsePrefer(header: string | string[] | undefined): Map<string, string> {
  const preferences = new Map<string, string>();
  if (header === undefined) return preferences;
  const text = Array.isArray(header) ? header.join(",") : header;
  for (const element of splitOutsideQuotes(text, ",")) {
    const [preference = ""] = splitOutsideQuotes(element, ";");
    const equals = preference.indexOf("=");
    const name = (equals === -1 ? preference : preference.slice(0, equals)).trim();
    if (!TOKEN.test(name)) continue;
    const key = name.toLowerCase();
    if (preferences.has(key)) continue;
    preferences.set(key, equals === -1 ? "" : wordValue(preference.slice(equals + 1).trim()));
  }
  return preferences;
}

/** The preference the edge applies: answer 202 once the job runs, instead of waiting for its end. */
export const RESPOND_ASYNC = "respond-async";

/** True when the request's Prefer header asks for `respond-async`. */
export function prefersRespondAsync(header: string | string[] | undefined): boolean {
  return parsePrefer(header).has(RESPOND_ASYNC);
}
