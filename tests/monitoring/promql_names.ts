/**
 * The metric names a PromQL expression reads, found by a small lexer: names
 * outside label matchers, strings, ranges and `by (…)`-style label lists that
 * are neither keywords nor functions, plus `{__name__="…"}` matchers. Grafana's
 * `$variables` are skipped. Syntax is checked separately by promtool; this only
 * has to find names in expressions that parse.
 *
 * @module
 */

/** Aggregation operators and keywords: never metric names. */
const KEYWORDS = new Set([
  "sum",
  "min",
  "max",
  "avg",
  "group",
  "stddev",
  "stdvar",
  "count",
  "count_values",
  "bottomk",
  "topk",
  "quantile",
  "limitk",
  "limit_ratio",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "bool",
  "and",
  "or",
  "unless",
  "offset",
  "atan2",
  "inf",
  "nan",
]);

/** Keywords followed by a parenthesized list of label names. */
const LABEL_LISTS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

const IDENT_START = /[a-zA-Z_:]/;
const IDENT = /[a-zA-Z0-9_:]/;

/** Index just past the string literal starting at `i`. */
function skipString(s: string, i: number): number {
  const quote = s[i];
  let j = i + 1;
  while (j < s.length && s[j] !== quote) {
    if (s[j] === "\\" && quote !== "`") j++;
    j++;
  }
  if (j >= s.length) throw new Error(`unterminated string in: ${s}`);
  return j + 1;
}

/** Index just past the bracket closing the one at `i` (strings inside are skipped). */
function skipBracket(s: string, i: number, open: string, close: string): number {
  let depth = 0;
  let j = i;
  while (j < s.length) {
    const c = s[j];
    if (c === '"' || c === "'" || c === "`") {
      j = skipString(s, j);
      continue;
    }
    if (c === open) depth++;
    if (c === close && --depth === 0) return j + 1;
    j++;
  }
  throw new Error(`unbalanced ${open}${close} in: ${s}`);
}

/** The metric names `expr` reads, sorted. */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  const s = expr;
  let i = 0;
  const nextNonSpace = (j: number) => {
    while (j < s.length && /\s/.test(s[j])) j++;
    return j;
  };
  while (i < s.length) {
    const c = s[i];
    if (c === "#") {
      while (i < s.length && s[i] !== "\n") i++;
    } else if (c === '"' || c === "'" || c === "`") {
      i = skipString(s, i);
    } else if (c === "{") {
      const end = skipBracket(s, i, "{", "}");
      for (const m of s.slice(i, end).matchAll(/__name__\s*=\s*"([^"]+)"/g)) names.add(m[1]);
      i = end;
    } else if (c === "[") {
      i = skipBracket(s, i, "[", "]");
    } else if (c === "$") {
      // Grafana variables: ${name}, ${name:format}, $name.
      i = s[i + 1] === "{" ? skipBracket(s, i + 1, "{", "}") : i + 1;
      while (i < s.length && IDENT.test(s[i])) i++;
    } else if (/[0-9.]/.test(c)) {
      // Numbers, durations (5m, 1h30m), hex and exponents.
      while (i < s.length && /[0-9a-zA-Z_.+]/.test(s[i])) {
        if (s[i] === "+" && !/[eE]/.test(s[i - 1])) break;
        i++;
      }
    } else if (IDENT_START.test(c)) {
      let j = i;
      while (j < s.length && IDENT.test(s[j])) j++;
      const word = s.slice(i, j);
      const next = nextNonSpace(j);
      i = j;
      const lower = word.toLowerCase();
      if (LABEL_LISTS.has(lower)) {
        if (s[next] === "(") i = skipBracket(s, next, "(", ")");
      } else if (KEYWORDS.has(lower) || s[next] === "(") {
        // an operator, or a function call
      } else {
        names.add(word);
      }
    } else {
      i++;
    }
  }
  return [...names].sort();
}
