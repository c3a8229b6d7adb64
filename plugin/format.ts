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

/** The first 12 hex digits of a `sha256:…` digest (as `docker images` shows them). */
export function shortDigest(digest: string | undefined): string {
  if (!digest) return "-";
  const m = /^sha256:([a-f0-9]{12})/.exec(digest);
  return m ? m[1] : digest;
}

/** A reference with its digest shortened: `quay.io/org/os@sha256:0123456789ab`. */
export function shortImage(ref: string | undefined): string {
  if (!ref) return "-";
  return ref.replace(/@sha256:([a-f0-9]{12})[a-f0-9]{52}$/, "@sha256:$1");
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
