import assert from "node:assert/strict";
import { anchors, bootcCommandLines, relativeLinks, slug, splitMarkdown } from "./markdown.ts";

const MD = [
  "# Title",
  "",
  "See [install](install.md#with-helm), [web](https://example.com) and `[no](link.md)`.",
  "",
  "```yaml",
  "a: [x](y.md)",
  "```",
  "",
  "## `status`, `why`",
  "## Title",
  "Run `kubectl bootc pause workers` or kubectl bootc why worker-1; `kubectl bootc --help`.",
].join("\n");

Deno.test("splitMarkdown separates fenced blocks from prose", () => {
  const { blocks, prose } = splitMarkdown(MD);
  assert.deepEqual(blocks, [{ lang: "yaml", text: "a: [x](y.md)", line: 5 }]);
  assert.equal(prose.length, MD.split("\n").length - 3);
  assert.throws(() => splitMarkdown("```sh\nopen"), /unclosed code block at line 1/);
});

Deno.test("relativeLinks skips URLs, code spans and code blocks", () => {
  assert.deepEqual(relativeLinks(MD), [{ target: "install.md#with-helm", line: 3 }]);
});

Deno.test("slug and anchors follow GitHub: punctuation dropped, repeats numbered", () => {
  assert.equal(slug("Drain policy: which pods go"), "drain-policy-which-pods-go");
  assert.equal(slug("`pause`, `resume`"), "pause-resume");
  assert.equal(slug("Upgrade the [operator](x.md)"), "upgrade-the-operator");
  assert.deepEqual([...anchors(MD)], ["title", "status-why", "title-1"]);
});

Deno.test("bootcCommandLines finds each command line and stops at its end", () => {
  assert.deepEqual(bootcCommandLines(MD).map((c) => c.words), [
    ["pause", "workers"],
    ["why", "worker-1"],
    ["--help"],
  ]);
});
