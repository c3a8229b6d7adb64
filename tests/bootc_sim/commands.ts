/**
 * The simulated `bootc` and `systemctl` commands: read the host's files, call the pure model,
 * write the result back, and print what bootc prints.
 *
 * @module
 */

import { awaitApplyVerdict, isApply, recordApplyInvocation } from "./apply_gate.ts";
import { parseBootcArgs } from "./cli.ts";
import type { BootcCommand, SoftRebootMode } from "./cli.ts";
import {
  checksumFor,
  type HostState,
  lockStaged,
  newDeployment,
  prepareSoftReboot,
  type PulledImage,
  pulledImage,
  rollback,
  type SimSettings,
  softRebootDecision,
  specImage,
  stage,
  unlockStaged,
} from "./model.ts";
import { type BadBoot, badBootFromLabels, BadBootLabelError } from "./bad_boot.ts";
import { PullError, pullImage, type PullResult, readHostAuth } from "./registry_pull.ts";
import { buildHost, canonicalJson, emptyHost, humanStatus, type Json } from "./status.ts";
import {
  lockSysroot,
  readHostState,
  readSettings,
  readUnits,
  type SimPaths,
  syncComposefsDeployDirs,
  type SysrootLock,
  touchBootcDir,
  writeHostState,
  writeUnits,
} from "./store.ts";
import { bootComplete, systemctl } from "./systemctl.ts";

/** Where a command writes and what it sees. */
export interface CommandContext {
  /** The simulated host. */
  paths: SimPaths;
  /** Arguments after the program name. */
  argv: string[];
  /** The process environment (for `container`). */
  env: Record<string, string | undefined>;
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** Whether standard output is a terminal (bootc then defaults to human output, else YAML). */
  stdoutIsTerminal: boolean;
}

/** The exit code, or `"hang"`: `--apply` asked for a reboot and waits to be killed, lock held. */
export type CommandOutcome = number | "hang";

/** bootc failed: `error: <context>: <cause>` on stderr, exit 1. */
class BootcError extends Error {}

/** How long a gated `--apply` waits for the harness's verdict before it fails. */
const APPLY_GATE_TIMEOUT_MS = 300_000;

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** bootc's container detection: `container` in the environment, `/run/.containerenv`, `/.dockerenv`. */
async function detectContainer(ctx: CommandContext, settings: SimSettings): Promise<boolean> {
  return settings.inContainer || ctx.env.container !== undefined ||
    await exists(`${ctx.paths.root}/run/.containerenv`) ||
    await exists(`${ctx.paths.root}/.dockerenv`);
}

/** Runs `bootc <argv>` against the simulated host. */
export async function runBootc(ctx: CommandContext): Promise<CommandOutcome> {
  let settings: SimSettings;
  try {
    settings = await readSettings(ctx.paths);
  } catch {
    ctx.err(
      `error: bootc simulator: no simulated host at ${ctx.paths.root} (create one with SimulatedHost.create)\n`,
    );
    return 1;
  }
  const parsed = parseBootcArgs(ctx.argv, settings.bootcVersion);
  if (!parsed.ok) {
    ctx.err(parsed.usageError);
    return 2;
  }
  const cmd = parsed.command;
  try {
    // Every --apply is recorded the moment it is invoked, before it changes anything, and (with
    // the gate on) waits for the harness's verdict: see apply_gate.ts.
    let invocation: string | undefined;
    if (isApply(cmd)) {
      invocation = (await recordApplyInvocation(ctx.paths, ctx.argv)).id;
      if (settings.applyGate) {
        const verdict = await awaitApplyVerdict(ctx.paths, invocation, {
          timeoutMs: APPLY_GATE_TIMEOUT_MS,
        });
        if (!verdict) {
          throw new BootcError(
            `bootc simulator: apply gate: no verdict on invocation ${invocation} from the ` +
              `harness within ${APPLY_GATE_TIMEOUT_MS / 1000} s`,
          );
        }
      }
    }
    switch (cmd.kind) {
      case "version":
        ctx.out(`bootc ${settings.bootcVersion}\n`);
        return 0;
      case "help":
        ctx.out(cmd.text);
        return 0;
      case "status":
        return await status(ctx, settings, cmd);
      default:
        return await mutate(ctx, settings, cmd, invocation);
    }
  } catch (e) {
    if (e instanceof BootcError) {
      ctx.err(`error: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

async function status(
  ctx: CommandContext,
  settings: SimSettings,
  cmd: Extract<BootcCommand, { kind: "status" }>,
): Promise<number> {
  if (cmd.formatVersion !== null && cmd.formatVersion > 1) {
    throw new BootcError(`Status: Unsupported format version: ${cmd.formatVersion}`);
  }
  let host: { [key: string]: Json };
  if (settings.notBootc || await detectContainer(ctx, settings)) {
    host = emptyHost();
  } else {
    // status takes the sysroot lock: it waits while a switch is pulling.
    const lock = await lockSysroot(ctx.paths, ["bootc", ...ctx.argv]);
    let state: HostState;
    try {
      state = await readHostState(ctx.paths);
    } finally {
      await lock.release();
    }
    const failure = (await readSettings(ctx.paths)).statusFailure;
    if (failure) throw new BootcError(`Status: ${failure}`);
    host = buildHost({ state, settings, bootedOnly: cmd.booted });
  }
  const format = cmd.format ??
    (cmd.json ? "json" : ctx.stdoutIsTerminal ? "humanreadable" : "yaml");
  if (format === "json") {
    // to_canon_json_writer: one line, no trailing newline.
    ctx.out(canonicalJson(host));
  } else if (format === "yaml") {
    const { stringify } = await import("yaml");
    ctx.out(stringify(host));
  } else {
    ctx.out(humanStatus(host, cmd.verbose));
  }
  return 0;
}

/** Prints what deploy::stage prints for a queued image. */
function queuedMessage(pullspec: string, image: PulledImage): string {
  const version = image.version ? `  Version: ${image.version}\n` : "";
  return `Queued for next boot: ${pullspec}\n${version}  Digest: ${image.imageDigest}\n`;
}

interface Session {
  ctx: CommandContext;
  settings: SimSettings;
  lock: SysrootLock;
  state: HostState;
  /** The recorded `--apply` invocation, if this is one. */
  invocation?: string;
}

async function save(s: Session, opts: { touch: boolean }): Promise<void> {
  await writeHostState(s.ctx.paths, s.state);
  if (s.settings.composefs) {
    const verities = [s.state.staged, s.state.booted, s.state.rollback, ...s.state.other]
      .filter((d) => d !== null).map((d) => d!.checksum + d!.checksum);
    await syncComposefsDeployDirs(s.ctx.paths, verities);
  } else if (opts.touch) {
    await touchBootcDir(s.ctx.paths);
  }
}

/** The bad-boot mode a pulled image's label asks for; a malformed label fails the command. */
function badBootOf(image: PullResult, context: string): BadBoot | null {
  try {
    return badBootFromLabels(image.labels);
  } catch (e) {
    if (e instanceof BadBootLabelError) {
      throw new BootcError(`${context}: bootc simulator: ${e.message}`);
    }
    throw e;
  }
}

async function pull(s: Session, pullspec: string, context: string): Promise<PullResult> {
  try {
    const image = await pullImage({
      pullspec,
      architecture: s.settings.architecture,
      insecureRegistries: s.settings.insecureRegistries,
      auth: await readHostAuth(s.ctx.paths.root),
      caCertPem: s.settings.caCertPem,
      root: s.ctx.paths.root,
    });
    // The layer download: the sysroot lock stays held meanwhile.
    if (s.settings.pullDelayMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, s.settings.pullDelayMs));
    }
    return image;
  } catch (e) {
    if (e instanceof PullError) {
      throw new BootcError(
        `${context}: Pulling: Creating importer: failed to invoke method OpenImage: ${e.message}`,
      );
    }
    throw e;
  }
}

/** Handles `--soft-reboot` for the deployment that boots next; then `--apply`. */
async function softRebootThenApply(
  s: Session,
  opts: {
    mode: SoftRebootMode | null;
    apply: boolean;
    context: string;
    kind: "staged" | "rollback";
  },
): Promise<CommandOutcome> {
  const target = opts.kind === "staged" ? s.state.staged : s.state.rollback;
  const decision = softRebootDecision(opts.mode, target, opts.kind);
  if (!decision.ok) {
    throw new BootcError(
      `${opts.context}: Handling ${
        opts.kind === "staged" ? "staged " : ""
      }soft reboot: Handling soft reboot: ${decision.error}`,
    );
  }
  let soft = false;
  if (decision.soft) {
    const what = opts.kind === "staged" ? "Staged" : "Rollback";
    s.ctx.out(`${what} deployment is soft-reboot capable, preparing for soft-reboot...\n`);
    if (opts.kind === "staged") s.state = prepareSoftReboot(s.state);
    soft = true;
  } else if (opts.kind === "staged") {
    soft = s.state.staged?.softRebootPrepared ?? false;
  }
  if (opts.apply) {
    s.state = {
      ...s.state,
      rebootRequest: {
        soft,
        command: ["bootc", ...s.ctx.argv],
        at: new Date().toISOString(),
        invocation: s.invocation ?? null,
      },
    };
  }
  if (decision.soft || opts.apply) await save(s, { touch: false });
  return opts.apply ? "hang" : 0;
}

async function mutate(
  ctx: CommandContext,
  settings: SimSettings,
  cmd: Exclude<BootcCommand, { kind: "version" | "help" | "status" }>,
  invocation: string | undefined,
): Promise<CommandOutcome> {
  if (await detectContainer(ctx, settings)) {
    throw new BootcError(
      "Preparing for write: Detected container; this command requires a booted host system.",
    );
  }
  if (settings.notBootc) {
    throw new BootcError("Initializing storage: Not currently booted into an OSTree system");
  }
  const lock = await lockSysroot(ctx.paths, ["bootc", ...ctx.argv]);
  let outcome: CommandOutcome = 1;
  try {
    const s: Session = {
      ctx,
      settings,
      lock,
      state: await readHostState(ctx.paths),
      invocation,
    };
    if (!s.state.booted) {
      throw new BootcError("Initializing storage: Not currently booted into an OSTree system");
    }
    if (cmd.kind === "switch") outcome = await switchCmd(s, cmd);
    else if (cmd.kind === "upgrade") outcome = await upgradeCmd(s, cmd);
    else outcome = await rollbackCmd(s, cmd);
    return outcome;
  } finally {
    // `--apply` keeps the lock until it is killed, as bootc does while systemd reboots.
    if (outcome !== "hang") await lock.release();
  }
}

async function fromDownloaded(
  s: Session,
  cmd: { apply: boolean; softReboot: SoftRebootMode | null },
  context: string,
): Promise<CommandOutcome> {
  const unlocked = unlockStaged(s.state);
  if (!unlocked.ok) throw new BootcError(`${context}: ${unlocked.error}`);
  s.state = unlocked.state;
  // Unlocking does not touch /ostree/bootc.
  await save(s, { touch: false });
  s.ctx.out(
    unlocked.changed
      ? "Staged deployment will now be applied on reboot\n"
      : "Staged deployment is already set to apply on reboot\n",
  );
  return await softRebootThenApply(s, {
    mode: cmd.softReboot,
    apply: cmd.apply,
    context,
    kind: "staged",
  });
}

async function switchCmd(
  s: Session,
  cmd: Extract<BootcCommand, { kind: "switch" }>,
): Promise<CommandOutcome> {
  const context = "Switching";
  if (cmd.fromDownloaded) return await fromDownloaded(s, cmd, context);
  const target = cmd.target!;
  if (cmd.transport !== "registry") {
    throw new BootcError(`${context}: the simulator supports only the registry transport`);
  }
  const spec = specImage(s.state);
  if (spec && spec.image === target && spec.transport === cmd.transport) {
    s.ctx.out("Image specification is unchanged.\n");
    return 0;
  }
  const image = await pull(s, target, context);
  const deployment = newDeployment({
    state: s.state,
    pullspec: target,
    image,
    checksum: await checksumFor(image.imageDigest),
    softRebootCapable: s.settings.softRebootCapable,
    downloadOnly: cmd.downloadOnly,
    badBoot: badBootOf(image, context),
  });
  s.state = stage(s.state, deployment);
  await save(s, { touch: true });
  if (!cmd.quiet) s.ctx.out(queuedMessage(target, image));
  return await softRebootThenApply(s, {
    mode: cmd.softReboot,
    apply: cmd.apply,
    context,
    kind: "staged",
  });
}

async function upgradeCmd(
  s: Session,
  cmd: Extract<BootcCommand, { kind: "upgrade" }>,
): Promise<CommandOutcome> {
  const context = "Upgrading";
  const spec = specImage(s.state);
  if (!spec) throw new BootcError(`${context}: Missing image in specification`);
  if (cmd.fromDownloaded) return await fromDownloaded(s, cmd, context);
  const fetched = await pull(s, spec.image, context);
  const booted = s.state.booted!;
  const staged = s.state.staged;
  if (cmd.check) {
    const present = booted.image?.imageDigest === fetched.imageDigest ||
      staged?.image?.imageDigest === fetched.imageDigest;
    if (present) {
      s.ctx.out(`No changes in: ${spec.image}\n`);
      return 0;
    }
    s.ctx.out(`Update available for: ${spec.image}\n`);
    if (fetched.version) s.ctx.out(`  Version: ${fetched.version}\n`);
    s.ctx.out(`  Digest: ${fetched.imageDigest}\n`);
    s.state = { ...s.state, booted: { ...booted, cachedUpdate: pulledImage(fetched) } };
    await save(s, { touch: true });
    return 0;
  }
  if (staged && staged.image?.imageDigest === fetched.imageDigest) {
    let changed = false;
    if (cmd.downloadOnly) {
      const r = lockStaged(s.state);
      s.state = r.state;
      changed = r.changed;
      if (changed) s.ctx.out("Image downloaded, but will not be applied on reboot\n");
    } else if (staged.downloadOnly) {
      const r = unlockStaged(s.state);
      if (r.ok) {
        s.state = r.state;
        changed = r.changed;
      }
      if (changed) s.ctx.out("Staged deployment will now be applied on reboot\n");
    }
    if (!changed) s.ctx.out("Staged update present, not changed\n");
    // Locking or unlocking does not touch /ostree/bootc.
    if (changed) await save(s, { touch: false });
    return await softRebootThenApply(s, {
      mode: cmd.softReboot,
      apply: cmd.apply,
      context,
      kind: "staged",
    });
  }
  if (booted.image?.imageDigest === fetched.imageDigest) {
    s.ctx.out("No update available.\n");
    return 0;
  }
  const deployment = newDeployment({
    state: s.state,
    pullspec: spec.image,
    image: fetched,
    checksum: await checksumFor(fetched.imageDigest),
    softRebootCapable: s.settings.softRebootCapable,
    downloadOnly: cmd.downloadOnly,
    badBoot: badBootOf(fetched, context),
  });
  s.state = stage(s.state, deployment);
  await save(s, { touch: true });
  if (!cmd.quiet) s.ctx.out(queuedMessage(spec.image, fetched));
  return await softRebootThenApply(s, {
    mode: cmd.softReboot,
    apply: cmd.apply,
    context,
    kind: "staged",
  });
}

async function rollbackCmd(
  s: Session,
  cmd: Extract<BootcCommand, { kind: "rollback" }>,
): Promise<CommandOutcome> {
  const context = "Rollback";
  const r = rollback(s.state);
  if (!r.ok) throw new BootcError(`${context}: ${r.error}`);
  s.state = r.state;
  await save(s, { touch: true });
  s.ctx.out(r.reverting ? "Next boot: current deployment\n" : "Next boot: rollback deployment\n");
  return await softRebootThenApply(s, {
    mode: cmd.softReboot,
    apply: cmd.apply,
    context,
    kind: "rollback",
  });
}

/** Whether the boot is still `starting` at `nowMs` (within `startingMs` of `bootedAt`). */
export function bootStarting(
  bootedAt: string | undefined,
  startingMs: number,
  nowMs: number,
): boolean {
  if (!bootedAt || startingMs <= 0) return false;
  return nowMs < Date.parse(bootedAt) + startingMs;
}

/** What systemd on the simulated host knows of the current boot. */
interface BootView {
  units: Awaited<ReturnType<typeof readUnits>>;
  settings: SimSettings;
  bootedAt: string | undefined;
}

async function readBootView(paths: SimPaths): Promise<BootView> {
  return {
    units: await readUnits(paths),
    settings: await readSettings(paths),
    bootedAt: (await readHostState(paths)).bootedAt,
  };
}

/** Runs `systemctl <argv>` against the simulated host's units. */
export async function runSystemctl(ctx: CommandContext): Promise<number> {
  let boot: BootView;
  try {
    boot = await readBootView(ctx.paths);
  } catch {
    ctx.err(`System has not been booted with systemd as init system (PID 1). Can't operate.\n`);
    return 1;
  }
  let { units } = boot;
  const { settings, bootedAt } = boot;
  const starting = () => bootStarting(bootedAt, settings.startingMs, Date.now());
  // `is-system-running --wait` waits until the boot finished.
  if (ctx.argv.includes("is-system-running") && ctx.argv.includes("--wait") && starting()) {
    const left = Date.parse(bootedAt!) + settings.startingMs - Date.now();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, left) + 1));
    units = await readUnits(ctx.paths);
  }
  const result = systemctl(ctx.argv, units, { starting: starting() });
  if (JSON.stringify(result.units) !== JSON.stringify(units)) {
    await writeUnits(ctx.paths, result.units);
  }
  ctx.out(result.stdout);
  ctx.err(result.stderr);
  return result.code;
}

/**
 * Runs `systemd-bless-boot status`: `good` once the boot reached boot-complete.target (the
 * service blesses the entry right after it), else `indeterminate`, as systemd-boot counting.
 */
export async function runBlessBoot(ctx: CommandContext): Promise<number> {
  const verb = ctx.argv[0] ?? "status";
  if (verb !== "status") {
    ctx.err(`Unknown command verb '${verb}'.\n`);
    return 1;
  }
  let boot: BootView;
  try {
    boot = await readBootView(ctx.paths);
  } catch (e) {
    ctx.err(`Failed to read boot state: ${e instanceof Error ? e.message : e}\n`);
    return 1;
  }
  const starting = bootStarting(boot.bootedAt, boot.settings.startingMs, Date.now());
  ctx.out(bootComplete(boot.units, { starting }) ? "good\n" : "indeterminate\n");
  return 0;
}
