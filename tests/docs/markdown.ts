/**
 * The few facts the docs test reads from Markdown: fenced blocks, prose lines,
 * relative links, heading anchors (as GitHub makes them) and `kubectl bootc`
 * command lines. Pure, and only as much Markdown as the docs use.
 *
 * @module
 */

/** A fenced code block: its info string's language and its text. */
export interface FencedBlock {
  lang: string;
  text: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** A line outside fenced blocks. */
export interface ProseLine {
  text: string;
  /** 1-based line number. */
  line: number;
}

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w-]*)/;

/** Splits `md` into its fenced blocks and the lines outside them. */
export function splitMarkdown(md: string): { blocks: FencedBlock[]; prose: ProseLine[] } {
  const blocks: FencedBlock[] = [];
  const prose: ProseLine[] = [];
  let open: { fence: string; lang: string; line: number; lines: string[] } | undefined;
  md.split("\n").forEach((text, i) => {
    const fence = FENCE.exec(text);
    if (open) {
      if (fence && fence[1].startsWith(open.fence) && !fence[2]) {
        blocks.push({ lang: open.lang, text: open.lines.join("\n"), line: open.line });
        open = undefined;
      } else open.lines.push(text);
    } else if (fence) {
      open = { fence: fence[1], lang: fence[2].toLowerCase(), line: i + 1, lines: [] };
    } else prose.push({ text, line: i + 1 });
  });
  if (open) throw new Error(`unclosed code block at line ${open.line}`);
  return { blocks, prose };
}

/** The prose with inline code spans removed (links inside code are no links). */
function withoutCode(text: string): string {
  return text.replace(/`+[^`]*`+/g, "");
}

/** Link targets of `[text](target)` in the prose that are not URLs or mail addresses. */
export function relativeLinks(md: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  for (const p of splitMarkdown(md).prose) {
    for (const m of withoutCode(p.text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(m[1])) continue;
      out.push({ target: m[1], line: p.line });
    }
  }
  return out;
}

/** GitHub's anchor of one heading's text (before de-duplication). */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .trim()
    .replace(/\s/g, "-");
}

/** Every heading anchor of `md`, repeated headings numbered as GitHub numbers them. */
export function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const p of splitMarkdown(md).prose) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(p.text);
    if (!h) continue;
    const base = slug(h[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/**
 * Every `kubectl bootc …` command line in `md` (prose and code blocks): the words
 * after `kubectl bootc`, up to four, stopping at the end of a code span, a
 * comment or a separator.
 */
export function bootcCommandLines(md: string): { words: string[]; line: number }[] {
  const out: { words: string[]; line: number }[] = [];
  md.split("\n").forEach((text, i) => {
    for (const m of text.matchAll(/kubectl bootc((?:[ \t]+[^\s`|;)#,]+){1,4})/g)) {
      out.push({ words: m[1].trim().split(/\s+/), line: i + 1 });
    }
  });
  return out;
}
