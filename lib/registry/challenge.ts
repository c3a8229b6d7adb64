/**
 * `WWW-Authenticate` header parsing (RFC 7235 challenges), for the registry
 * token flow: `Bearer realm="https://auth.example/token",service="reg",scope="repository:os:pull"`.
 *
 * @module
 */

/** One authentication challenge. */
export interface AuthChallenge {
  /** The scheme, lower-cased: "bearer", "basic", … */
  scheme: string;
  /** The auth-params with lower-cased names, quotes and escapes removed. */
  params: Record<string, string>;
}

/**
 * Parses a `WWW-Authenticate` value into its challenges. Several headers
 * joined with ", " (as `Headers.get` does) parse as several challenges.
 */
export function parseWwwAuthenticate(header: string | null): AuthChallenge[] {
  const challenges: AuthChallenge[] = [];
  if (!header) return challenges;
  const s = header;
  let i = 0;
  let current: AuthChallenge | undefined;
  const skip = (chars: RegExp) => {
    while (i < s.length && chars.test(s[i])) i++;
  };
  const readToken = () => {
    const start = i;
    while (i < s.length && !/[\s,=]/.test(s[i])) i++;
    return s.slice(start, i);
  };
  while (i < s.length) {
    skip(/[\s,]/);
    if (i >= s.length) break;
    const token = readToken();
    skip(/[ \t]/);
    if (s[i] === "=" && current && token.length > 0) {
      // An auth-param `name=value` (or the tail of a token68, which has only '=' after it).
      i++;
      skip(/[ \t]/);
      let value = "";
      if (s[i] === '"') {
        i++;
        while (i < s.length && s[i] !== '"') {
          if (s[i] === "\\" && i + 1 < s.length) i++;
          value += s[i++];
        }
        i++; // closing quote
      } else {
        const start = i;
        while (i < s.length && s[i] !== ",") i++;
        value = s.slice(start, i).trim();
      }
      current.params[token.toLowerCase()] = value;
    } else if (token.length > 0) {
      current = { scheme: token.toLowerCase(), params: {} };
      challenges.push(current);
    } else {
      i++; // stray '=' (token68 padding): skip it
    }
  }
  return challenges;
}
