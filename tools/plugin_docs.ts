/**
 * Writes `docs/plugin.md`, the `kubectl bootc` reference, from the plugin's own
 * `--help` output, so the page says exactly what the plugin does. A test
 * (`plugin_docs_test.ts`) fails when the page differs from what this prints.
 *
 *   deno run --allow-read --allow-run --allow-write=docs/plugin.md tools/plugin_docs.ts
 *
 * With `--stdout` it prints the page instead of writing it.
 *
 * @module
 */

/** The page this writes, relative to the repository. */
export const PLUGIN_DOCS = new URL("../docs/plugin.md", import.meta.url);

const PLUGIN_MAIN = new URL("../plugin/main.ts", import.meta.url);
const REPO = new URL("../", import.meta.url);

/** Runs `kubectl bootc --help` from the sources and returns what it prints. */
export async function pluginHelp(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-prompt", PLUGIN_MAIN.pathname, "--help"],
    cwd: REPO.pathname,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`kubectl bootc --help failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** One command of the help's usage section: its synopsis lines and description. */
interface CommandHelp {
  synopsis: string;
  body: string[];
}

/** One top-level section of the help (`Flags:`, `Exit codes: …`). */
interface Section {
  title: string;
  lines: string[];
}

const COMMAND_LINE = /^ {2}kubectl bootc (\S.*)$/;
const SECTION_LINE = /^([A-Z][A-Za-z ]*):\s*(.*)$/;

/** Splits the help into its intro, the commands of `Usage:` and the other sections. */
export function parseHelp(help: string): {
  intro: string[];
  commands: CommandHelp[];
  sections: Section[];
} {
  const intro: string[] = [];
  const commands: CommandHelp[] = [];
  const sections: Section[] = [];
  let section: Section | undefined;
  for (const line of help.replace(/\s+$/, "").split("\n")) {
    const head = SECTION_LINE.exec(line);
    if (head) {
      section = { title: head[1], lines: head[2] ? [head[2]] : [] };
      if (section.title !== "Usage") sections.push(section);
      continue;
    }
    if (!section) {
      if (line.trim()) intro.push(line.trim());
      continue;
    }
    const command = section.title === "Usage" ? COMMAND_LINE.exec(line) : null;
    if (command) commands.push({ synopsis: `kubectl bootc ${command[1]}`, body: [] });
    else if (section.title === "Usage" && commands.length > 0) commands.at(-1)!.body.push(line);
    else section.lines.push(line);
  }
  return { intro, commands, sections };
}

/** The command words of a synopsis: `pause POOL | resume POOL` gives `pause`, `resume`. */
export function commandNames(synopsis: string): string[] {
  return synopsis.replace(/^kubectl bootc /, "").split(" | ").map((alt) => {
    const words: string[] = [];
    for (const word of alt.trim().split(/\s+/)) {
      if (!/^[a-z][a-z-]*$/.test(word)) break;
      words.push(word);
    }
    return words.join(" ");
  }).filter((name) => name !== "");
}

/** The lines of `lines` with their common indentation removed, blank ends dropped. */
function dedent(lines: readonly string[]): string[] {
  const indents = lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length);
  const cut = indents.length ? Math.min(...indents) : 0;
  const out = lines.map((l) => l.slice(cut).trimEnd());
  while (out.length && !out[0]) out.shift();
  while (out.length && !out.at(-1)) out.pop();
  return out;
}

/** The heading of a command: its names in code spans (`status`; `pause`, `resume`). */
function heading(c: CommandHelp): string {
  return commandNames(c.synopsis).map((n) => `\`${n}\``).join(", ");
}

/** GitHub's anchor for a heading made by {@linkcode heading}. */
function anchor(c: CommandHelp): string {
  return commandNames(c.synopsis).join(" ").replace(/ /g, "-");
}

/** Renders the reference page from the help text (pure). */
export function renderPluginDocs(help: string): string {
  const { intro, commands, sections } = parseHelp(help);
  const out = [
    "# Plugin reference: `kubectl bootc`",
    "",
    "<!-- Generated from `kubectl bootc --help` by tools/plugin_docs.ts: edit plugin/cli.ts and run",
    "     deno run --allow-read --allow-run --allow-write=docs/plugin.md tools/plugin_docs.ts -->",
    "",
    ...intro.flatMap((l) => [l, ""]),
    "Build it with `deno task build` and put `dist/` on `PATH`; kubectl finds it by its name. More on",
    "each screen: [plugin/README.md](../plugin/README.md).",
    "",
    "## Commands",
    "",
    ...commands.map((c) => `- [${heading(c)}](#${anchor(c)})`),
    "",
  ];
  for (const c of commands) {
    out.push(`### ${heading(c)}`, "", "```text", c.synopsis, "", ...dedent(c.body), "```", "");
  }
  for (const s of sections) out.push(`## ${s.title}`, "", "```text", ...dedent(s.lines), "```", "");
  return out.join("\n").replace(/\n+$/, "\n");
}

if (import.meta.main) {
  const page = renderPluginDocs(await pluginHelp());
  if (Deno.args.includes("--stdout")) await Deno.stdout.write(new TextEncoder().encode(page));
  else await Deno.writeTextFile(PLUGIN_DOCS, page);
}
