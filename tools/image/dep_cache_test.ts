import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { DEP_CACHE_FILE, depAnalysisCache } from "./dep_cache.ts";

Deno.test("the dependency-analysis cache answers for the image's path, the same bytes each time", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bootc-dep-cache-test-" });
  try {
    const bundle = `${dir}/app.js`;
    await Deno.writeTextFile(
      bundle,
      `const m = await import("yaml").catch(() => null);\nconsole.log(m === null);\n`,
    );
    const url = "file:///app/daemon.js";
    const first = await depAnalysisCache({ bundle, url });
    const second = await depAnalysisCache({ bundle, url });
    assert.deepEqual(second, first);
    await Deno.writeFile(`${dir}/${DEP_CACHE_FILE}`, first);
    const db = new DatabaseSync(`${dir}/${DEP_CACHE_FILE}`, { readOnly: true });
    try {
      const rows = db.prepare("SELECT specifier, module_info FROM moduleinfocache").all() as {
        specifier: string;
        module_info: string;
      }[];
      assert.deepEqual(rows.map((r) => r.specifier), [url]);
      assert.match(rows[0].module_info, /"argument":"yaml"/);
      const info = db.prepare("SELECT value FROM info WHERE key = 'CLI_VERSION'").get() as {
        value: string;
      };
      assert.equal(info.value, Deno.version.deno);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
