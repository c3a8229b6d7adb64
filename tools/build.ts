/**
 * `deno task build`: the operator's executables in `dist/`: the controller, the daemon and
 * the `kubectl bootc` plugin.
 *
 * Each entry point (`controller/main.ts`, `daemon/main.ts`, `plugin/main.ts`) is first bundled
 * into one JavaScript file (`dist/controller.js`, `dist/daemon.js`, `dist/plugin.js`; the
 * daemon's YAML parser apart, in `dist/yaml_parser.js`: see `Target.yamlBeside`). Then:
 * - **compile** mode: `deno compile` turns each bundle into a single-file binary
 *   (`dist/bootc-operator-controller`, `dist/bootc-operator-daemon`, `dist/kubectl-bootc`).
 *   This needs a `denort`
 *   base binary, which `deno compile` downloads from dl.deno.land or takes from `DENORT_BIN`.
 * - **bundle** mode (when no working `denort` is available, as on machines without access to
 *   dl.deno.land): the same paths hold a small launcher script that runs the bundle with
 *   `deno run --cached-only`.
 *
 * Every bundle is stamped with the commit it was built from (`git rev-parse --short HEAD`,
 * "unknown" outside a git checkout), which `--version`, the first log line and the build-info
 * metric report (lib/version.ts).
 *
 * The mode is chosen by probing: a tiny program is compiled and run, and compile mode is used
 * only if it prints what it should (a `DENORT_BIN` pointing at a plain `deno` yields a binary
 * that starts Deno's own CLI instead). `BOOTC_BUILD_MODE=compile|bundle` forces a mode.
 *
 * Then, unless `--no-images` is given or only some targets were asked for, the controller and
 * daemon OCI images are built from the bundles into `dist/images/` (tools/image/images.ts).
 *
 * Usage: `deno task build [--mode=auto|compile|bundle] [--no-images] [controller|daemon|plugin ...]`.
 * The end-to-end tests call {@linkcode ensureBuild}.
 *
 * @module
 */

import { YAML_PARSER_BUNDLE } from "../lib/kube/config.ts";
import { COMMIT_PLACEHOLDER } from "../lib/version.ts";

/** How the executables are produced. */
export type BuildMode = "compile" | "bundle";

/** One executable the build produces. */
export interface Target {
  /** Short name: "controller", "daemon" or "plugin". */
  name: "controller" | "daemon" | "plugin";
  /** Entry point, relative to the repository root. */
  entry: string;
  /** File name of the executable in the output directory. */
  executable: string;
  /** File name of the bundle in the output directory. */
  bundle: string;
  /** Deno permission flags baked into the binary or passed by the launcher. */
  permissions: readonly string[];
  /**
   * `deno bundle --platform`. "browser" makes npm packages resolve to their browser builds:
   * for the daemon that is `yaml`'s ES module build, where the Node build is CommonJS and
   * puts a start-up `import "node:module"` (Deno's Node compatibility layer, ~3 MiB resident)
   * at the top of the bundle even though YAML is parsed only for a kubeconfig file.
   */
  platform: "deno" | "browser";
  /**
   * V8 flags baked into the binary (`deno compile --v8-flags`) or passed by the launcher.
   * The daemon runs with `--lite-mode` (interpreter only, no optimizing compilers): it mostly
   * waits, and idle it is ~2 MiB smaller (tools/measure_daemon_idle.ts).
   */
  v8Flags: readonly string[];
  /**
   * Bundle the YAML parser apart: `yaml` is left out of this bundle and bundled on its own
   * beside it (lib/kube/yaml_parser.ts as `yaml_parser.js`), loaded only when a YAML kubeconfig
   * is parsed (lib/kube/config.ts). For the daemon: Deno reads and keeps every module of the
   * graph at start-up, in resident memory proportional to its size, and in a pod the daemon
   * never parses YAML (~5 MiB less at start).
   */
  yamlBeside?: boolean;
}

/**
 * The controller's Deno permissions, exactly: any host (the API server, registries, webhooks and
 * Prometheus are named by pools), any file for reading (the kubeconfig, the files it names and the
 * service-account files are chosen at run time), the environment variables it and its npm
 * dependencies read, and its host name (leader identity). No subprocess, no file writes, no FFI.
 */
export const CONTROLLER_PERMISSIONS: readonly string[] = [
  "--allow-net",
  "--allow-read",
  "--allow-env=KUBECONFIG,KUBERNETES_SERVICE_HOST,KUBERNETES_SERVICE_PORT,HOME,USERPROFILE," +
  "LOG_LEVEL,NODE_DEBUG,LOG_STREAM,LOG_TOKENS",
  "--allow-sys=hostname",
];

/**
 * The daemon's Deno permissions: all. It runs privileged in the host's namespaces, and Deno
 * grants reading the namespace links it compares (`/proc/self/ns/mnt`) only with
 * `--allow-all`, so a narrower list would leave it unable to find the host.
 */
export const DAEMON_PERMISSIONS: readonly string[] = ["--allow-all"];

/**
 * The executables. The controller talks to the API server, reads its kubeconfig or
 * service-account files and serves probes: it needs no write or subprocess access. The daemon
 * runs privileged on the host, runs bootc through nsenter and writes the host's auth file, so
 * Deno's sandbox would add nothing there. The kubectl plugin reads the user's kubeconfig (and
 * the files it names) and talks to the API server; it may run the kubeconfig's exec credential
 * plugins (cloud logins), hence `--allow-run`, and writes nothing.
 */
export const TARGETS: readonly Target[] = [
  {
    name: "controller",
    entry: "controller/main.ts",
    executable: "bootc-operator-controller",
    bundle: "controller.js",
    permissions: CONTROLLER_PERMISSIONS,
    platform: "deno",
    v8Flags: [],
  },
  {
    name: "daemon",
    entry: "daemon/main.ts",
    executable: "bootc-operator-daemon",
    bundle: "daemon.js",
    permissions: DAEMON_PERMISSIONS,
    platform: "browser",
    v8Flags: ["--lite-mode"],
    yamlBeside: true,
  },
  {
    name: "plugin",
    entry: "plugin/main.ts",
    executable: "kubectl-bootc",
    bundle: "plugin.js",
    permissions: ["--allow-net", "--allow-env", "--allow-read", "--allow-run"],
    platform: "deno",
    v8Flags: [],
  },
];

/**
 * Folders and files whose changes require a rebuild (test files excluded). Not deno.lock:
 * the bundler may write it, and it only changes with the exact pins in deno.json.
 */
export const SOURCE_PATHS = ["controller", "daemon", "plugin", "lib", "deno.json"] as const;

/** Options of {@linkcode build} and {@linkcode ensureBuild}. */
export interface BuildOptions {
  /** Repository root (absolute path). Defaults to the folder above this file. */
  root?: string;
  /** Output directory. Defaults to `<root>/dist`. */
  outDir?: string;
  /** "auto" probes for a working `denort`. Defaults to `BOOTC_BUILD_MODE` or "auto". */
  mode?: BuildMode | "auto";
  /** Which targets to build. Defaults to all. */
  only?: readonly Target["name"][];
  /** The `deno` executable. Defaults to `Deno.execPath()`. */
  deno?: string;
  /** Progress lines go here. Defaults to stderr. */
  log?: (line: string) => void;
  /**
   * The base binary `deno compile` uses (`DENORT_BIN`). Defaults to the environment's; an
   * option, so a test can set it without touching the environment other test files share.
   */
  denortBin?: string;
}

/** One built executable. */
export interface BuiltTarget {
  name: Target["name"];
  /** Absolute path of the binary or launcher. */
  executable: string;
  /** Absolute path of the bundle. */
  bundle: string;
  bundleBytes: number;
  /** Absolute paths of what the bundle loads from beside it (the daemon's YAML parser). */
  beside: string[];
  executableBytes: number;
}

/** What {@linkcode build} produced; also written to `<outDir>/build.json`. */
export interface BuildResult {
  mode: BuildMode;
  /** Fingerprint of the sources the outputs were built from. */
  fingerprint: string;
  /** Why compile mode was or was not used. */
  modeReason: string;
  /** `DENORT_BIN` at build time ("" when unset): a change makes the next build probe again. */
  denortBin: string;
  targets: BuiltTarget[];
}

const PROBE_TEXT = "bootc-operator-build-probe";
/** Upper bound for the probe (it may download denort, ~40 MB). */
const PROBE_TIMEOUT_MS = 180_000;
const STAMP = "build.json";

/**
 * The launcher script that runs a bundle in bundle mode. It execs Deno (so signals reach the
 * program directly), from `$DENO` or `PATH`, with `--cached-only` (the bundle has no imports
 * left to fetch) and without the repository's config, exactly like the compiled binary. With
 * neither, it runs the Deno this was built with through Node's `npx` (as the README's commands
 * do), so the plugin and the daemon work on a machine where Deno is not installed.
 */
export function launcherScript(target: Target): string {
  const flags = [
    "--cached-only",
    "--no-config",
    "--no-lock",
    "--no-prompt",
    ...v8FlagArgs(target),
    ...target.permissions,
  ];
  return [
    "#!/bin/sh",
    `# ${target.executable}: runs ${target.bundle} (built by \`deno task build\` from ${target.entry}).`,
    "# A launcher because no denort base binary was available for `deno compile`.",
    'here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)',
    'if [ -z "${DENO:-}" ] && ! command -v deno >/dev/null 2>&1; then',
    `  exec npx -y deno@${Deno.version.deno} run ${flags.join(" ")} "$here/${target.bundle}" "$@"`,
    "fi",
    `exec "\${DENO:-deno}" run ${flags.join(" ")} "$here/${target.bundle}" "$@"`,
    "",
  ].join("\n");
}

/** `--v8-flags=...` for the target's V8 flags (none when it has none). */
function v8FlagArgs(target: Target): string[] {
  return target.v8Flags.length ? [`--v8-flags=${target.v8Flags.join(",")}`] : [];
}

/**
 * The commit the sources at `root` are checked out at (`git rev-parse --short HEAD`), or
 * "unknown" when that is not a git checkout or git is missing.
 */
export async function gitCommit(root: string): Promise<string> {
  try {
    const out = await new Deno.Command("git", {
      args: ["rev-parse", "--short", "HEAD"],
      cwd: root,
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    const commit = new TextDecoder().decode(out.stdout).trim();
    return out.success && /^[0-9a-f]{4,40}$/.test(commit) ? commit : "unknown";
  } catch {
    return "unknown";
  }
}

/**
 * Replaces the commit placeholder of lib/version.ts in bundle text with `commit`. It must
 * occur exactly once: otherwise the bundler changed how the constant is emitted, and a binary
 * that silently reports "dev" would be worse than a failed build.
 */
export function stampCommit(bundle: string, commit: string): string {
  const literal = JSON.stringify(COMMIT_PLACEHOLDER);
  const parts = bundle.split(literal);
  if (parts.length !== 2) {
    throw new Error(
      `expected the commit placeholder once in the bundle, found ${parts.length - 1}`,
    );
  }
  return parts.join(JSON.stringify(commit));
}

/**
 * A fingerprint of the build inputs: every non-test source file's path, size and mtime, this
 * build script, the Deno version and the commit (stamped into the bundles). It changes when a
 * source is edited, added or removed, or a commit is made.
 */
export async function sourceFingerprint(root: string): Promise<string> {
  const entries: string[] = [`deno ${Deno.version.deno}`, `commit ${await gitCommit(root)}`];
  const visit = async (path: string): Promise<void> => {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    if (info.isDirectory) {
      const names: string[] = [];
      for await (const entry of Deno.readDir(path)) names.push(entry.name);
      for (const name of names.sort()) await visit(`${path}/${name}`);
    } else if (info.isFile && !/_test\.[jt]sx?$/.test(path)) {
      entries.push(`${path.slice(root.length)} ${info.size} ${info.mtime?.getTime() ?? 0}`);
    }
  };
  for (const path of SOURCE_PATHS) await visit(`${root}/${path}`);
  await visit(new URL(import.meta.url).pathname);
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(entries.join("\n")),
  );
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Builds the executables (always; see {@linkcode ensureBuild} for the incremental form). */
export async function build(options: BuildOptions = {}): Promise<BuildResult> {
  const root = options.root ?? defaultRoot();
  const outDir = options.outDir ?? `${root}/dist`;
  const deno = options.deno ?? Deno.execPath();
  const log = options.log ?? ((line: string) => console.error(line));
  const targets = TARGETS.filter((t) => !options.only || options.only.includes(t.name));
  const fingerprint = await sourceFingerprint(root);
  const denortBin = options.denortBin ?? Deno.env.get("DENORT_BIN") ?? "";

  await Deno.mkdir(outDir, { recursive: true });
  // Build into a private folder and rename into place: concurrent builds (parallel test
  // processes) never see or leave half-written files.
  const work = await Deno.makeTempDir({ dir: outDir, prefix: ".build-" });
  try {
    const requested = options.mode ?? envMode() ?? "auto";
    const { mode, reason } = requested === "auto"
      ? await probeCompile({ deno, work, log, denortBin })
      : { mode: requested, reason: "requested" };
    log(modeNote(mode, reason));

    const built: BuiltTarget[] = [];
    for (const target of targets) {
      const bundle = `${work}/${target.bundle}`;
      const executable = `${work}/${target.executable}`;
      const beside = await bundleTarget({ deno, root, work, target });
      if (mode === "compile") {
        await run(deno, [
          "compile",
          "--quiet",
          "--no-config",
          "--no-lock",
          ...v8FlagArgs(target),
          ...target.permissions,
          ...beside.flatMap((file) => ["--include", file]),
          "-o",
          executable,
          bundle,
        ], { cwd: work, what: `compiling ${target.bundle}`, denortBin });
      } else {
        await Deno.writeTextFile(executable, launcherScript(target), { mode: 0o755 });
      }
      await Deno.chmod(executable, 0o755);
      // What the bundle loads from beside it first: it never appears without them.
      for (const file of beside) await Deno.rename(`${work}/${file}`, `${outDir}/${file}`);
      await Deno.rename(bundle, `${outDir}/${target.bundle}`);
      await Deno.rename(executable, `${outDir}/${target.executable}`);
      built.push({
        name: target.name,
        executable: `${outDir}/${target.executable}`,
        bundle: `${outDir}/${target.bundle}`,
        bundleBytes: (await Deno.stat(`${outDir}/${target.bundle}`)).size,
        beside: beside.map((file) => `${outDir}/${file}`),
        executableBytes: (await Deno.stat(`${outDir}/${target.executable}`)).size,
      });
      log(`[build] ${target.executable} <- ${target.entry}`);
    }
    const result: BuildResult = {
      mode,
      modeReason: reason,
      denortBin,
      fingerprint,
      targets: built,
    };
    if (targets.length === TARGETS.length) {
      // The stamp is written last, so it only ever describes complete outputs.
      await Deno.writeTextFile(`${work}/${STAMP}`, JSON.stringify(result, null, 2) + "\n");
      await Deno.rename(`${work}/${STAMP}`, `${outDir}/${STAMP}`);
    }
    return result;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/**
 * Bundles `target` into `work`, and what it loads from beside it (its YAML parser, when
 * `yamlBeside`). Returns the names of those files beside the bundle.
 */
async function bundleTarget(
  o: { deno: string; root: string; work: string; target: Target },
): Promise<string[]> {
  const { target } = o;
  const bundle = (entry: string, out: string, extra: string[] = []) =>
    run(o.deno, [
      "bundle",
      "--quiet",
      `--platform=${target.platform}`,
      ...extra,
      "-o",
      `${o.work}/${out}`,
      entry,
    ], {
      cwd: o.root,
      what: `bundling ${entry}`,
    });
  await bundle(
    `${o.root}/${target.entry}`,
    target.bundle,
    target.yamlBeside ? ["--external", "yaml"] : [],
  );
  const path = `${o.work}/${target.bundle}`;
  await Deno.writeTextFile(
    path,
    stampCommit(await Deno.readTextFile(path), await gitCommit(o.root)),
  );
  if (!target.yamlBeside) return [];
  await bundle(`${o.root}/lib/kube/yaml_parser.ts`, YAML_PARSER_BUNDLE);
  return [YAML_PARSER_BUNDLE];
}

/** Argv prefixes that run each executable. */
export interface Executables {
  controller: string[];
  daemon: string[];
  /** `kubectl-bootc`. */
  plugin: string[];
}

let inFlight: Promise<Executables> | undefined;

/**
 * Returns how to run the built controller and daemon, building first when the outputs are
 * missing or older than the sources (by fingerprint). Concurrent calls in one process share
 * one build. In bundle mode the launcher needs `deno` on `PATH` (or `$DENO`).
 */
export function ensureBuild(options: BuildOptions = {}): Promise<Executables> {
  if (!inFlight) {
    inFlight = ensureBuildOnce(options).finally(() => {
      inFlight = undefined;
    });
  }
  return inFlight;
}

async function ensureBuildOnce(options: BuildOptions): Promise<Executables> {
  const root = options.root ?? defaultRoot();
  const outDir = options.outDir ?? `${root}/dist`;
  await Deno.mkdir(outDir, { recursive: true });
  // Test files run in parallel (one process, several workers, or several processes): one of
  // them builds while the others wait and then find the outputs fresh.
  const lock = await Deno.open(`${outDir}/.build.lock`, { create: true, write: true });
  try {
    await lock.lock(true);
    return await ensureBuildLocked({ ...options, root, outDir });
  } finally {
    lock.close();
  }
}

async function ensureBuildLocked(
  options: BuildOptions & { root: string; outDir: string },
): Promise<Executables> {
  const { root, outDir } = options;
  const current = await readStamp(outDir);
  const fingerprint = await sourceFingerprint(root);
  const wanted = options.mode ?? envMode();
  let result = current;
  const fresh = current !== undefined && current.fingerprint === fingerprint &&
    (wanted === undefined || wanted === "auto" || wanted === current.mode) &&
    await allExist(current.targets.map((t) => t.executable));
  if (!fresh) {
    // A previous probe's verdict is reused (an unreachable dl.deno.land costs only once)
    // unless DENORT_BIN changed since.
    const sameDenort = current?.denortBin ===
      (options.denortBin ?? Deno.env.get("DENORT_BIN") ?? "");
    const mode = wanted ?? (current && sameDenort ? current.mode : "auto");
    result = await build({ ...options, root, outDir, mode, only: undefined });
  }
  const path = (name: Target["name"]) => result!.targets.find((t) => t.name === name)!.executable;
  if (result!.mode === "compile") {
    return { controller: [path("controller")], daemon: [path("daemon")], plugin: [path("plugin")] };
  }
  // The launcher finds `deno` on PATH or in $DENO; a machine that runs Deno only through
  // `npx deno` has none on PATH, so hand it this very executable.
  const launch = (name: Target["name"]) => ["/usr/bin/env", `DENO=${Deno.execPath()}`, path(name)];
  return { controller: launch("controller"), daemon: launch("daemon"), plugin: launch("plugin") };
}

/**
 * Decides between compile and bundle mode: compiles and runs a one-line program. Compile mode
 * is used only when the produced binary prints the probe text.
 */
async function probeCompile(
  options: { deno: string; work: string; log: (line: string) => void; denortBin: string },
): Promise<{ mode: BuildMode; reason: string }> {
  const source = `${options.work}/probe.js`;
  const binary = `${options.work}/probe`;
  await Deno.writeTextFile(source, `console.log(${JSON.stringify(PROBE_TEXT)});\n`);
  const via = options.denortBin ? `DENORT_BIN=${options.denortBin}` : "download";
  options.log(`[build] probing deno compile (denort via ${via})`);
  try {
    const compiled = await new Deno.Command(options.deno, {
      args: ["compile", "--quiet", "--no-config", "--no-lock", "-o", binary, source],
      cwd: options.work,
      ...(options.denortBin ? { env: { DENORT_BIN: options.denortBin } } : {}),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    }).output();
    if (!compiled.success) {
      const why = compileError(new TextDecoder().decode(compiled.stderr));
      return { mode: "bundle", reason: `deno compile failed (${via}): ${why}` };
    }
    const ran = await new Deno.Command(binary, {
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).output();
    const out = new TextDecoder().decode(ran.stdout).trim();
    if (ran.success && out === PROBE_TEXT) return { mode: "compile", reason: `denort via ${via}` };
    return { mode: "bundle", reason: `compiled probe did not run the program (${via})` };
  } finally {
    await Deno.remove(binary).catch(() => {});
    await Deno.remove(source).catch(() => {});
  }
}

/** Reads `<outDir>/build.json`, or undefined when absent or unreadable. */
export async function readStamp(outDir: string): Promise<BuildResult | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(`${outDir}/${STAMP}`)) as BuildResult;
  } catch {
    return undefined;
  }
}

/**
 * Runs `argv` + `args` with a closed stdin and returns the wall-clock milliseconds until it
 * exits and its exit code. For the startup figure: `--help` makes the executables load
 * their whole bundle and exit (the controller by rejecting the flag, with code 2).
 */
export async function timeRun(
  argv: string[],
  args: string[],
): Promise<{ ms: number; code: number }> {
  const started = performance.now();
  const result = await new Deno.Command(argv[0], {
    args: [...argv.slice(1), ...args],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  return { ms: performance.now() - started, code: result.code };
}

function envMode(): BuildMode | "auto" | undefined {
  const value = Deno.env.get("BOOTC_BUILD_MODE");
  if (value === undefined || value === "") return undefined;
  if (value === "compile" || value === "bundle" || value === "auto") return value;
  throw new Error(`BOOTC_BUILD_MODE must be compile, bundle or auto, not ${value}`);
}

function defaultRoot(): string {
  return new URL("..", import.meta.url).pathname.replace(/\/$/, "");
}

async function allExist(paths: string[]): Promise<boolean> {
  for (const path of paths) {
    try {
      await Deno.stat(path);
    } catch {
      return false;
    }
  }
  return true;
}

async function run(
  command: string,
  args: string[],
  options: { cwd: string; what: string; denortBin?: string },
): Promise<void> {
  const result = await new Deno.Command(command, {
    args,
    cwd: options.cwd,
    ...(options.denortBin ? { env: { DENORT_BIN: options.denortBin } } : {}),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    const stderr = new TextDecoder().decode(result.stderr);
    throw new Error(`${options.what} failed (exit ${result.code}):\n${stderr}`);
  }
}

/**
 * The one line the build says about its mode. A `deno compile` that could not download its
 * runtime (denort, from dl.deno.land) is what machines without that access always see and is
 * harmless, so it gets a calm sentence, not the raw network error (kept in build.json's
 * `modeReason`).
 */
export function modeNote(mode: BuildMode, reason: string): string {
  if (mode === "compile") return `[build] mode: compile (${reason})`;
  if (reason === "requested") return "[build] mode: bundle (requested)";
  if (reason.startsWith("deno compile failed (download)")) {
    return "[build] deno compile needs to download the runtime; not reachable here — " +
      "building launchers that run with deno instead";
  }
  return `[build] deno compile is not usable here (${reason}) — building launchers that run ` +
    "with deno instead";
}

/** The most telling line of `deno compile`'s error output (the cause naming denort or the URL). */
function compileError(text: string): string {
  // deno colours its output even when piped.
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter(
    Boolean,
  );
  const cause = lines.find((l) => /denort|dl\.deno\.land|DENORT_BIN/i.test(l));
  return (cause ?? lines.find((l) => l.startsWith("error:")) ?? "no output").replace(/^\d+: /, "");
}

function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${bytes} B`;
}

if (import.meta.main) {
  const modeArg = Deno.args.find((a) => a.startsWith("--mode="))?.slice("--mode=".length);
  if (modeArg !== undefined && !["auto", "compile", "bundle"].includes(modeArg)) {
    console.error(`--mode must be auto, compile or bundle, not ${modeArg}`);
    Deno.exit(2);
  }
  const noImages = Deno.args.includes("--no-images");
  const only = Deno.args.filter((a) => !a.startsWith("--")) as Target["name"][];
  for (const name of only) {
    if (!TARGETS.some((t) => t.name === name)) {
      console.error(`unknown target ${name}: expected controller, daemon or plugin`);
      Deno.exit(2);
    }
  }
  const result = await build({
    mode: modeArg as BuildMode | "auto" | undefined,
    only: only.length ? only : undefined,
  });
  for (const target of result.targets) {
    // The best of three runs: the first one also warms the page cache.
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await timeRun([target.executable], ["--help"]));
    const best = Math.min(...runs.map((r) => r.ms));
    console.log(
      `${target.executable}: ${result.mode === "compile" ? "binary" : "launcher"} ` +
        `${formatBytes(target.executableBytes)}, bundle ${formatBytes(target.bundleBytes)}, ` +
        `startup to exit on --help ${best.toFixed(0)} ms (exit ${runs[0].code})`,
    );
  }
  // The images package the bundles (not the executables), so they do not depend on the mode.
  if (!noImages && only.length === 0) {
    const { buildImages, describeImages } = await import("./image/images.ts");
    const images = await buildImages({ distDir: `${defaultRoot()}/dist`, targets: TARGETS });
    for (const line of describeImages(images)) console.log(line);
  }
}
