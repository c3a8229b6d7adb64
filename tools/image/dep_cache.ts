/**
 * A pre-filled Deno dependency-analysis cache for a bundle, to ship in its image.
 *
 * Before running a module, Deno parses its source to find its imports (swc) unless its
 * dependency-analysis cache (`$DENO_DIR/dep_analysis_cache_v2`, SQLite) already holds the
 * answer for that file URL and source hash. For the daemon's bundle that parse costs ~4–5 MiB
 * of resident memory at start-up, counted in its peak, on every start of a fresh container
 * (tools/measure_daemon_idle.ts). The image therefore carries the cache, answered for the
 * bundle's path in the image.
 *
 * Produced by running `deno cache` on a copy of the bundle, then writing a fresh database
 * with the same schema and rows, the row's file URL replaced by the image's: the same bundle
 * and Deno give the same bytes (no timestamps; one writer, fixed order), so images stay
 * reproducible. The cache answers only the Deno version that wrote it (its `info` table);
 * another version simply parses again.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";

/** The cache's file name in `DENO_DIR`. */
export const DEP_CACHE_FILE = "dep_analysis_cache_v2";

/** Options of {@linkcode depAnalysisCache}. */
export interface DepCacheOptions {
  /** The bundle file. */
  bundle: string;
  /** Its file URL where it runs (e.g. `file:///app/daemon.js`). */
  url: string;
  /** The `deno` that analyses it: the version the image runs (default this one). */
  deno?: string;
}

/** The cache database's bytes for `o.bundle` at `o.url`. */
export async function depAnalysisCache(o: DepCacheOptions): Promise<Uint8Array> {
  const work = await Deno.makeTempDir({ prefix: "bootc-dep-cache-" });
  try {
    const copy = `${work}/${o.url.split("/").pop()}`;
    await Deno.copyFile(o.bundle, copy);
    const out = await new Deno.Command(o.deno ?? Deno.execPath(), {
      args: ["cache", "--quiet", "--no-config", "--no-lock", copy],
      env: { DENO_DIR: `${work}/deno`, DENO_NO_UPDATE_CHECK: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`deno cache ${copy} failed: ${new TextDecoder().decode(out.stderr)}`);
    }
    const target = `${work}/${DEP_CACHE_FILE}`;
    copyRows(`${work}/deno/${DEP_CACHE_FILE}`, target, `file://${copy}`, o.url);
    return await Deno.readFile(target);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** Writes `to`: `from`'s tables and rows, its one module row answered for `url` instead. */
function copyRows(from: string, to: string, analysed: string, url: string): void {
  const source = new DatabaseSync(from);
  const target = new DatabaseSync(to);
  try {
    const tables = source.prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name",
    ).all() as { name: string; sql: string }[];
    for (const { name, sql } of tables) {
      target.exec(sql);
      const select = source.prepare(`SELECT * FROM "${name}" ORDER BY 1`);
      select.setReadBigInts(true); // the source hash is a 64-bit integer
      const rows = select.all() as Record<string, unknown>[];
      if (name === "moduleinfocache") {
        const ours = rows.filter((r) => r.specifier === analysed);
        if (ours.length !== 1) throw new Error(`${from}: no single row for ${analysed}`);
        ours[0].specifier = url;
        rows.splice(0, rows.length, ...ours);
      }
      for (const row of rows) {
        const columns = Object.keys(row);
        target.prepare(
          `INSERT INTO "${name}" (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${
            columns.map(() => "?").join(", ")
          })`,
        ).run(...(Object.values(row) as (string | bigint | number | null)[]));
      }
    }
  } finally {
    source.close();
    target.close();
  }
}
