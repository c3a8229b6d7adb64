import assert from "node:assert/strict";
import {
  commandNames,
  parseHelp,
  PLUGIN_DOCS,
  pluginHelp,
  renderPluginDocs,
} from "./plugin_docs.ts";

const HELP = `kubectl bootc: a tool.

Usage:
  kubectl bootc status [POOL] [--watch]
      Per pool: a headline.
        indented more.
  kubectl bootc pause POOL | resume POOL
      Sets paused.

Flags:
  --no-color   no colours

Exit codes: 0 done; 1 a pool
is unhealthy.`;

Deno.test("parseHelp splits the intro, each command and the sections", () => {
  const help = parseHelp(HELP);
  assert.deepEqual(help.intro, ["kubectl bootc: a tool."]);
  assert.deepEqual(help.commands.map((c) => c.synopsis), [
    "kubectl bootc status [POOL] [--watch]",
    "kubectl bootc pause POOL | resume POOL",
  ]);
  assert.deepEqual(help.commands[0].body, [
    "      Per pool: a headline.",
    "        indented more.",
  ]);
  assert.deepEqual(help.sections.map((s) => [s.title, s.lines]), [
    ["Flags", ["  --no-color   no colours", ""]],
    ["Exit codes", ["0 done; 1 a pool", "is unhealthy."]],
  ]);
});

Deno.test("commandNames takes the leading command words of each alternative", () => {
  assert.deepEqual(commandNames("kubectl bootc pause POOL | resume POOL"), ["pause", "resume"]);
  assert.deepEqual(commandNames("kubectl bootc set image POOL REF"), ["set image"]);
  assert.deepEqual(commandNames("kubectl bootc status [POOL] [--watch]"), ["status"]);
});

Deno.test("renderPluginDocs gives each command a heading, its anchor and its text", () => {
  const page = renderPluginDocs(HELP);
  assert.match(page, /^- \[`pause`, `resume`\]\(#pause-resume\)$/m);
  assert.match(page, /^### `status`\n\n```text\nkubectl bootc status \[POOL\] \[--watch\]\n\n/m);
  assert.match(page, /Per pool: a headline\.\n {2}indented more\.\n```/);
  assert.match(page, /^## Exit codes\n\n```text\n0 done; 1 a pool\nis unhealthy\.\n```$/m);
});

Deno.test("docs/plugin.md is what tools/plugin_docs.ts renders from kubectl bootc --help", async () => {
  const want = renderPluginDocs(await pluginHelp());
  const have = await Deno.readTextFile(PLUGIN_DOCS);
  assert.equal(
    have,
    want,
    "docs/plugin.md is stale: run deno run --allow-read --allow-run " +
      "--allow-write=docs/plugin.md tools/plugin_docs.ts",
  );
});
