import assert from "node:assert/strict";
import { launcherScript, TARGETS } from "../build.ts";
import { lockedDeno, lockedPackage, readLock } from "./inputs.ts";
import {
  ALL_PACKAGES,
  basePackages,
  caBundle,
  entrypoint,
  IMAGE_NAMES,
  IMAGE_TAG,
  imageSpecs,
  nsenterPackages,
  PLATFORMS,
  RUN_FLAGS,
  selected,
  statusRecord,
} from "./spec.ts";

Deno.test("entrypoint: the image runs its bundle with exactly the launcher's deno flags", () => {
  for (const spec of imageSpecs(TARGETS)) {
    const target = TARGETS.find((t) => t.name === spec.name)!;
    const argv = entrypoint(spec);
    assert.equal(argv[0], "/usr/bin/deno");
    assert.equal(argv.at(-1), `/app/${target.bundle}`);
    const flags = argv.slice(2, -1);
    const v8 = target.v8Flags.length ? [`--v8-flags=${target.v8Flags.join(",")}`] : [];
    assert.deepEqual(flags, [...RUN_FLAGS, ...v8, ...target.permissions]);
    // The launcher of bundle mode runs `deno run <the same flags> <bundle>`.
    assert.match(launcherScript(target), new RegExp(` run ${flags.join(" ")} "\\$here/`));
  }
  // What ships is what was measured: the daemon image runs V8 in lite mode.
  const daemon = imageSpecs(TARGETS).find((s) => s.name === "daemon")!;
  assert.ok(entrypoint(daemon).includes("--v8-flags=--lite-mode"));
  // The daemon's bundle loads its YAML parser from beside it: the image carries that file too.
  assert.deepEqual(daemon.beside, ["yaml_parser.js"]);
  assert.deepEqual(imageSpecs(TARGETS).find((s) => s.name === "controller")!.beside, []);
});

Deno.test("selected: exact paths, folder prefixes and the copyright file", () => {
  const libc = { name: "libc6", include: ["lib/x86_64-linux-gnu/", "lib64/"] };
  assert.equal(selected(libc, "lib/x86_64-linux-gnu/libc.so.6"), true);
  assert.equal(selected(libc, "lib/x86_64-linux-gnu/"), false);
  assert.equal(selected(libc, "usr/bin/ldd"), false);
  assert.equal(selected(libc, "usr/share/doc/libc6/copyright"), true);
  assert.equal(selected(libc, "usr/share/doc/libc6/changelog.Debian.gz"), false);
  const nsenter = { name: "util-linux", include: ["usr/bin/nsenter"] };
  assert.equal(selected(nsenter, "usr/bin/nsenter"), true);
  assert.equal(selected(nsenter, "usr/bin/nsenter2"), false);
  assert.equal(
    selected({ ...nsenter, copyright: false }, "usr/share/doc/util-linux/copyright"),
    false,
  );
});

Deno.test("caBundle: sorted certificates, each ending in a newline, .crt only", () => {
  assert.equal(
    caBundle([
      { path: "mozilla/B.crt", text: "B" },
      { path: "mozilla/A.crt", text: "A\n" },
      { path: "mozilla/README", text: "no" },
    ]),
    "A\nB\n",
  );
});

Deno.test("statusRecord: the identifying fields of a control file", () => {
  const control = "Package: libc6\nSource: glibc\nVersion: 2.36-9\nArchitecture: amd64\n" +
    "Depends: libgcc-s1\nDescription: GNU C Library\n more\n";
  assert.equal(
    statusRecord(control),
    "Package: libc6\nStatus: install ok installed\nSource: glibc\nVersion: 2.36-9\n" +
      "Architecture: amd64\n",
  );
  assert.throws(() => statusRecord("Source: x\n"), /Package or Version/);
});

Deno.test("the lock pins exactly the packages the images use, each with a sha256", async () => {
  const lock = await readLock();
  for (const platform of PLATFORMS) {
    const arch = platform.architecture;
    const pinned = ALL_PACKAGES.map((name) => lockedPackage(lock, name, arch));
    // One package set: every architecture has the amd64 versions.
    assert.deepEqual(
      pinned.map((p) => `${p.name}=${p.version}`),
      ALL_PACKAGES.map((name) => `${name}=${lockedPackage(lock, name, "amd64").version}`),
    );
    for (const p of pinned) assert.ok(p.architecture === arch || p.architecture === "all");
    // The runtime in the images is the Deno the project runs with, on every platform.
    const deno = lockedDeno(lock, arch);
    assert.equal(deno.version, Deno.version.deno);
    assert.equal(deno.npmPackage, platform.denoNpmPackage);
  }
  assert.equal(lock.packages.length, new Set(lock.packages.map((p) => p.sha256)).size);
  for (const p of lock.packages) {
    assert.match(p.sha256, /^[0-9a-f]{64}$/);
    assert.ok(p.version.length > 0 && p.size > 0, p.name);
  }
  assert.deepEqual(lock.deno.map((d) => d.architecture), PLATFORMS.map((p) => p.architecture));
});

Deno.test("platform package selections: each architecture's library folder and loader", () => {
  const [amd64, arm64] = PLATFORMS;
  assert.deepEqual(basePackages(amd64)[0].include, ["lib/x86_64-linux-gnu/", "lib64/"]);
  assert.deepEqual(basePackages(arm64)[0].include, [
    "lib/aarch64-linux-gnu/",
    "lib/ld-linux-aarch64.so.1",
  ]);
  assert.deepEqual(nsenterPackages(arm64)[1].include, ["lib/aarch64-linux-gnu/libselinux.so.1"]);
  assert.deepEqual(
    basePackages(arm64).map((p) => p.name),
    basePackages(amd64).map((p) => p.name),
  );
});

Deno.test("manifests reference the images by the names the build gives them", async () => {
  const root = new URL("../../manifests/", import.meta.url).pathname;
  const controller = await Deno.readTextFile(`${root}controller.yaml`);
  const daemon = await Deno.readTextFile(`${root}daemon.yaml`);
  const install = await Deno.readTextFile(`${root}install.yaml`);
  const images = (text: string) => [...text.matchAll(/^\s*image: (\S+)$/gm)].map((m) => m[1]);
  assert.deepEqual(images(controller), [`${IMAGE_NAMES.controller}:${IMAGE_TAG}`]);
  assert.deepEqual(images(daemon), [`${IMAGE_NAMES.daemon}:${IMAGE_TAG}`]);
  assert.deepEqual(images(install).sort(), [
    `${IMAGE_NAMES.controller}:${IMAGE_TAG}`,
    `${IMAGE_NAMES.daemon}:${IMAGE_TAG}`,
  ]);
  // The kustomization's documented override names the same images.
  const kustomization = await Deno.readTextFile(`${root}kustomization.yaml`);
  for (const name of Object.values(IMAGE_NAMES)) assert.match(kustomization, new RegExp(name));
});
