import assert from "node:assert/strict";
import { renderGenerated } from "./gen.ts";

Deno.test("generated files are up to date (run `deno task gen`)", async () => {
  const root = new URL("..", import.meta.url);
  const files = renderGenerated();
  assert.ok(files.size >= 2);
  for (const [path, expected] of files) {
    const formatted = await formatYaml(expected);
    const actual = await Deno.readTextFile(new URL(path, root));
    assert.equal(actual, formatted, `${path} is stale: run \`deno task gen\``);
  }
});

/** `deno task gen` formats its output with `deno fmt`; compare against the same. */
async function formatYaml(text: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=yaml", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = out.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const result = await out.output();
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  return new TextDecoder().decode(result.stdout);
}
