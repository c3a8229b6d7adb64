/**
 * The user docs (README.md and docs/*.md) say only what holds: every relative
 * link resolves, to a heading where it names one; every YAML block parses, and
 * every pool, BootcNode and budget in them passes admission on a real API server
 * (`kubectl create --dry-run=server --validate=strict`); every `kubectl bootc`
 * command they name is one the plugin's parser takes; the troubleshooting page
 * has a heading for every reason the API and the gates define; the README stays
 * short.
 *
 * @module
 */
import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import {
  API_VERSION,
  BUDGET,
  HostHealthyReason,
  IdleReason,
  NODE,
  NodeDegradedReason,
  POOL,
  PoolDegradedReason,
  RebootAllowedReason,
  StalledReason,
  UpToDateReason,
  VerifiedReason,
} from "../../lib/api/constants.ts";
import { DrainConditionReason } from "../../lib/api/drain_conditions.ts";
import { PoolState } from "../../lib/api/pool_state.ts";
import { GATES } from "../../controller/gates/registry.ts";
import { parseCommandLine } from "../../plugin/cli.ts";
import { startCrdApiServer } from "../harness/crd_api_server.ts";
import { anchors, bootcCommandLines, relativeLinks, splitMarkdown } from "./markdown.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** README.md and every page of docs/, as paths relative to the repository. */
async function userDocs(): Promise<string[]> {
  const pages = ["README.md"];
  for await (const e of Deno.readDir(join(ROOT, "docs"))) {
    if (e.isFile && e.name.endsWith(".md")) pages.push(`docs/${e.name}`);
  }
  return pages.sort();
}

async function read(path: string): Promise<string> {
  return await Deno.readTextFile(join(ROOT, path));
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(join(ROOT, path)).then(() => true, () => false);
}

/** What is wrong with the relative links of `page`, and the Markdown files they reach. */
async function linkProblems(page: string): Promise<{ problems: string[]; reached: string[] }> {
  const problems: string[] = [];
  const reached: string[] = [];
  const text = await read(page);
  for (const { target, line } of relativeLinks(text)) {
    const [file, anchor] = target.split("#", 2);
    const path = file === "" ? page : relative(ROOT, join(ROOT, dirname(page), file));
    if (path.startsWith("..") || !(await exists(path))) {
      problems.push(`${page}:${line}: ${target}: no such file`);
      continue;
    }
    if (path.endsWith(".md")) reached.push(path);
    if (anchor === undefined) continue;
    if (!path.endsWith(".md") || !anchors(await read(path)).has(anchor)) {
      problems.push(`${page}:${line}: ${target}: no heading #${anchor} in ${path}`);
    }
  }
  return { problems, reached };
}

Deno.test("docs: every relative link resolves, to an existing heading where it names one", async () => {
  const pages = await userDocs();
  // The pages, then the Markdown files they link to (folder READMEs), one level deep.
  const queue = [...pages];
  const seen = new Set(pages);
  const problems: string[] = [];
  for (let i = 0; i < queue.length; i++) {
    const result = await linkProblems(queue[i]);
    problems.push(...result.problems);
    if (i >= pages.length) continue;
    for (const r of result.reached) {
      if (!seen.has(r)) queue.push(r);
      seen.add(r);
    }
  }
  assert.ok(queue.length > pages.length, "no folder README is linked from the docs");
  assert.deepEqual(problems, []);
});

/** Every YAML block of the user docs, parsed: its documents and where it is. */
async function yamlBlocks(): Promise<{ where: string; docs: unknown[]; errors: string[] }[]> {
  const out = [];
  for (const page of await userDocs()) {
    for (const b of splitMarkdown(await read(page)).blocks) {
      if (b.lang !== "yaml" && b.lang !== "yml") continue;
      const parsed = parseAllDocuments(b.text);
      const list = Array.isArray(parsed) ? parsed : [parsed];
      out.push({
        where: `${page}:${b.line}`,
        docs: list.map((d) => d.toJS()),
        errors: list.flatMap((d) => d.errors.map((e) => e.message)),
      });
    }
  }
  return out;
}

Deno.test("docs: every YAML block parses", async () => {
  const blocks = await yamlBlocks();
  assert.ok(blocks.length >= 10, `only ${blocks.length} YAML blocks found`);
  assert.deepEqual(blocks.filter((b) => b.errors.length).map((b) => `${b.where}: ${b.errors}`), []);
});

const KINDS = new Set<string>([POOL.kind, NODE.kind, BUDGET.kind]);

Deno.test("docs: every pool, BootcNode and budget in them passes admission", async () => {
  const objects = (await yamlBlocks()).flatMap((b) =>
    b.docs.filter((d): d is Record<string, unknown> =>
      typeof d === "object" && d !== null && (d as { apiVersion?: unknown }).apiVersion ===
        API_VERSION
    ).map((d) => ({ where: b.where, object: d }))
  );
  assert.ok(objects.length >= 8, `only ${objects.length} objects of ${API_VERSION} found`);
  const cp = await startCrdApiServer();
  try {
    // As a user applies them, with unknown fields refused rather than dropped.
    const refusal = async (object: unknown) => {
      const r = await cp.kubectl(
        ["create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-"],
        { stdin: JSON.stringify(object) },
      );
      return r.code === 0 ? undefined : r.stderr.trim();
    };
    const refused: string[] = [];
    for (const { where, object } of objects) {
      const error = KINDS.has(String(object.kind))
        ? await refusal(object)
        : `unknown kind ${object.kind}`;
      if (error !== undefined) refused.push(`${where}: ${object.kind}: ${error}`);
    }
    assert.deepEqual(refused, []);
    // The check can fail: a misspelt field is refused.
    const pool = structuredClone(objects.find((o) => o.object.kind === POOL.kind)!.object);
    (pool.spec as Record<string, unknown>).maxUnavailabel = 1;
    assert.match((await refusal(pool)) ?? "accepted", /unknown field "spec.maxUnavailabel"/);
  } finally {
    await cp.stop();
  }
});

/** Whether the plugin's parser takes `words` (the docs' words after `kubectl bootc`) as a command. */
function pluginTakes(words: readonly string[]): boolean {
  const [verb, second] = words;
  const tries = [[verb], [verb, "x"], [verb, "x", "y"]];
  if (second !== undefined && /^[a-z][a-z-]*$/.test(second)) {
    tries.push([verb, second], [verb, second, "x"], [verb, second, "x", "y"]);
  }
  return tries.some((argv) => {
    try {
      return parseCommandLine(argv).command.command !== "help";
    } catch {
      return false;
    }
  });
}

Deno.test("docs: every kubectl bootc command they name is one the plugin has", async () => {
  const unknown: string[] = [];
  let named = 0;
  for (const page of await userDocs()) {
    for (const { words, line } of bootcCommandLines(await read(page))) {
      if (words[0].startsWith("-")) continue; // flags alone (--help)
      named++;
      if (!pluginTakes(words)) unknown.push(`${page}:${line}: kubectl bootc ${words.join(" ")}`);
    }
  }
  assert.ok(named >= 20, `only ${named} kubectl bootc commands found`);
  assert.deepEqual(unknown, []);
  // The check can fail: a verb the plugin does not have is refused.
  assert.equal(pluginTakes(["frobnicate", "workers"]), false);
});

Deno.test("docs: troubleshooting has a heading for every reason the API and the gates define", async () => {
  const headings = splitMarkdown(await read("docs/troubleshooting.md")).prose
    .filter((p) => /^#{2,4} /.test(p.text)).map((p) => p.text).join("\n");
  const reasons = new Set<string>([
    ...Object.values(PoolDegradedReason),
    ...Object.values(PoolState),
    ...Object.values(UpToDateReason),
    ...Object.values(StalledReason),
    ...Object.values(RebootAllowedReason),
    ...Object.values(VerifiedReason),
    ...Object.values(HostHealthyReason),
    ...Object.values(IdleReason),
    ...Object.values(NodeDegradedReason),
    ...Object.values(DrainConditionReason),
    ...GATES.flatMap((g) => g.reasons.map((r) => r.reason)),
  ]);
  const missing = [...reasons].filter((r) => !headings.includes(`\`${r}\``));
  assert.deepEqual(missing, []);
});

Deno.test("docs: the README is short, its prose lines fit 120 columns, CI runs its test command", async () => {
  const readme = await read("README.md");
  const lines = readme.split("\n");
  assert.ok(lines.length <= 200, `README.md has ${lines.length} lines`);
  const long = splitMarkdown(readme).prose.filter((p) => [...p.text].length > 120);
  assert.deepEqual(long.map((p) => `README.md:${p.line}`), []);
  const test = "npx -y deno@2.9.6 task test";
  assert.ok(lines.some((l) => l.startsWith(`${test} `)), `README.md lost "${test}"`);
  assert.ok(lines.some((l) => l.startsWith("npx -y deno@2.9.6 task demo ")));
  assert.ok((await read(".ci/run")).split("\n").some((l) => l.startsWith(test)));
});
