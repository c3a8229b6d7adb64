import assert from "node:assert/strict";
import { cachedBuildOutput } from "./cached_build.ts";

async function script(body: string): Promise<string> {
  const path = await Deno.makeTempFile({ prefix: "bootc-cached-build-", suffix: ".sh" });
  await Deno.writeTextFile(path, body);
  return path;
}

Deno.test("cachedBuildOutput answers the script's last stdout line", async () => {
  const path = await script('echo "building..."\necho "/cache/tool-v1"\n');
  try {
    assert.equal(await cachedBuildOutput({ script: path }), "/cache/tool-v1");
    // An override that is not set changes nothing.
    assert.equal(
      await cachedBuildOutput({ script: path, override: "BOOTC_TEST_UNSET_OVERRIDE_X1" }),
      "/cache/tool-v1",
    );
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("cachedBuildOutput fails naming the script, its exit code and what is missing", async () => {
  const failing = await script('echo "/half/done"\nexit 3\n');
  const silent = await script("true\n");
  try {
    await assert.rejects(
      () => cachedBuildOutput({ script: failing, missing: "helm is missing" }),
      (e: Error) =>
        e.message.startsWith("helm is missing: ") && e.message.includes(failing) &&
        e.message.includes("exit 3"),
    );
    await assert.rejects(
      () => cachedBuildOutput({ script: silent }),
      (e: Error) => e.message.includes(silent) && e.message.includes("exit 0"),
    );
  } finally {
    await Deno.remove(failing);
    await Deno.remove(silent);
  }
});
