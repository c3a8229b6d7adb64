/**
 * RFC 8288 `Link` header parsing, for the registry's paginated lists
 * (`Link: </v2/repo/tags/list?last=b&n=2>; rel="next"`).
 *
 * @module
 */

/**
 * The absolute URL of the `rel="next"` link in a `Link` header, resolved
 * against `base` (the URL of the request that returned it), or undefined.
 */
export function parseNextLink(header: string | null, base: string | URL): URL | undefined {
  if (!header) return undefined;
  // Links are separated by commas outside <...>; URLs may contain commas only inside <...>.
  for (const match of header.matchAll(/<([^>]*)>\s*((?:;\s*[^;,]*)*)/g)) {
    const params = match[2].split(";").map((p) => p.trim()).filter((p) => p.length > 0);
    for (const param of params) {
      const eq = param.indexOf("=");
      if (eq < 0) continue;
      const key = param.slice(0, eq).trim().toLowerCase();
      const value = param.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
      if (key === "rel" && value.toLowerCase().split(/\s+/).includes("next")) {
        try {
          return new URL(match[1], base);
        } catch {
          return undefined;
        }
      }
    }
  }
  return undefined;
}
