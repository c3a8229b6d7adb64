/**
 * Short human forms of durations, times and image references.
 *
 * @module
 */

/** "0s", "45s", "2m05s", "1h02m", "3d04h": two units at most, rounded down. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, "0")}h`;
}

/** "45s ago" from a time and now; "" when the time is unknown. */
export function ago(time: Date | undefined, now: Date): string {
  return time ? `${formatDuration(now.getTime() - time.getTime())} ago` : "";
}

/** "HH:MM:SS" in UTC (stable across machines, like the API's times). */
export function clock(time: Date): string {
  return time.toISOString().slice(11, 19);
}

// The short forms of images are shared with every other view (printer columns, messages, Node
// annotations): one rule, in lib/api/display.ts.
export { imageSummary, shortDigest } from "../lib/api/display.ts";
/** A reference with its digest shortened (lib/api/display.ts `shortReference`). */
export { shortReference as shortImage } from "../lib/api/display.ts";

/**
 * `text` with every full `sha256:` digest cut to its 12 hex digits, as
 * {@linkcode shortDigest} shows them: messages written for the record carry
 * full references, a screen needs the short form.
 */
export function shortenDigests(text: string): string {
  return text.replace(/sha256:([a-f0-9]{12})[a-f0-9]{52}/g, "sha256:$1");
}

/** "1st", "2nd", "3rd", "4th", … "11th", "12th", "13th", "21st". */
export function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${["th", "st", "nd", "rd"][n % 10] ?? "th"}`;
}

/** Cuts `text` to `width` characters with an ellipsis. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return "";
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * Breaks `text` into lines of at most `width` characters at spaces (a word
 * longer than a line is cut), at most `maxLines` of them, the last one
 * truncated: a long message keeps its words in order instead of losing its
 * end to the edge of the terminal.
 */
export function wrap(text: string, width: number, maxLines: number): string[] {
  if (!Number.isFinite(width) || text.length <= width) return [text];
  const lines: string[] = [];
  let rest = text.trim();
  while (rest.length > 0 && lines.length < maxLines - 1) {
    if (rest.length <= width) break;
    const space = rest.lastIndexOf(" ", width);
    const cut = space > 0 ? space : width;
    lines.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest.length > 0) lines.push(truncate(rest, width));
  return lines;
}

/**
 * An error's message followed by its causes' ("fetch failed: error sending request for url
 * (https://…): … Connection refused"): the cause is often the only part naming the server.
 */
export function errorText(error: unknown): string {
  const parts: string[] = [];
  let e: unknown = error;
  for (let depth = 0; e !== undefined && depth < 5; depth++) {
    const text = e instanceof Error ? e.message : String(e);
    if (text && !parts.includes(text)) parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(": ");
}
