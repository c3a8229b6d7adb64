import assert from "node:assert/strict";
import { Layer, writeTar } from "./tar.ts";

const text = (s: string) => new TextEncoder().encode(s);

/** GNU tar's verbose listing of an archive (numeric owners, UTC). */
async function gnuList(archive: Uint8Array): Promise<string[]> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/a.tar`, archive);
    const out = await new Deno.Command("tar", {
      args: ["-tvf", `${dir}/a.tar`, "--numeric-owner", "--utc"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.success, true, new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout).trim().split("\n").map((l) =>
      l.replace(/\s+/g, " ")
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Layer: sorted entries, implicit parents, fixed owners and mtime, readable by GNU tar", async () => {
  const layer = new Layer({ mtime: 0 });
  layer.addFile("usr/bin/tool", text("#!x\n"), { mode: 0o755 });
  layer.addSymlink("lib64/ld.so", "/lib/ld.so");
  layer.addDir("home/nonroot", { mode: 0o700, uid: 65532, gid: 65532 });
  layer.addDir("tmp", { mode: 0o1777 });
  layer.addFile("etc/passwd", text("root:x:0:0::/root:/sbin/nologin\n"));
  assert.deepEqual(await gnuList(layer.toTar()), [
    "drwxr-xr-x 0/0 0 1970-01-01 00:00 etc/",
    "-rw-r--r-- 0/0 32 1970-01-01 00:00 etc/passwd",
    "drwxr-xr-x 0/0 0 1970-01-01 00:00 home/",
    "drwx------ 65532/65532 0 1970-01-01 00:00 home/nonroot/",
    "drwxr-xr-x 0/0 0 1970-01-01 00:00 lib64/",
    "lrwxrwxrwx 0/0 0 1970-01-01 00:00 lib64/ld.so -> /lib/ld.so",
    "drwxrwxrwt 0/0 0 1970-01-01 00:00 tmp/",
    "drwxr-xr-x 0/0 0 1970-01-01 00:00 usr/",
    "drwxr-xr-x 0/0 0 1970-01-01 00:00 usr/bin/",
    "-rwxr-xr-x 0/0 4 1970-01-01 00:00 usr/bin/tool",
  ]);
});

Deno.test("Layer: the same entries in any order give the same bytes", () => {
  const a = new Layer();
  a.addFile("b/two", text("2"));
  a.addFile("a/one", text("1"));
  const b = new Layer();
  b.addFile("a/one", text("1"));
  b.addFile("b/two", text("2"));
  assert.deepEqual(a.toTar(), b.toTar());
  assert.equal(a.toTar().length % 512, 0);
});

Deno.test("Layer: a path added twice, or under a file, is an error", () => {
  const layer = new Layer();
  layer.addFile("etc/passwd", text("x"));
  assert.throws(() => layer.addFile("etc/passwd", text("y")), /added twice/);
  assert.throws(() => layer.addFile("etc/passwd/x", text("y")), /not a directory/);
  assert.throws(() => layer.addFile("../escape", text("y")), /invalid path/);
  // An implicit parent can be refined once; an equal directory is a no-op.
  layer.addDir("etc", { mode: 0o700 });
  layer.addDir("etc", { mode: 0o700 });
  assert.throws(() => layer.addDir("etc", { mode: 0o755 }), /added twice/);
});

Deno.test("writeTar: long paths use the ustar prefix field", async () => {
  const dir = "d".repeat(60) + "/" + "e".repeat(60);
  const archive = writeTar([{
    type: "file",
    path: `${dir}/file.txt`,
    mode: 0o644,
    uid: 0,
    gid: 0,
    data: text("hello"),
  }]);
  const listing = await gnuList(archive);
  assert.deepEqual(listing, [`-rw-r--r-- 0/0 5 1970-01-01 00:00 ${dir}/file.txt`]);
  assert.throws(
    () => writeTar([{ type: "dir", path: "x".repeat(300), mode: 0o755, uid: 0, gid: 0 }]),
    /too long/,
  );
});
