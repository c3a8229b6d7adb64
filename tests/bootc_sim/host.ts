/**
 * The test-harness side of the bootc host simulator: create a simulated host booted into an image
 * from a real registry, hand its `bootc` command line to the daemon, watch for reboot requests,
 * perform (soft) reboots, and change machine settings.
 *
 * @module
 */

import {
  checksumFor,
  DEFAULT_SETTINGS,
  type HostState,
  initialState,
  newDeployment,
  type RebootRequest,
  type SimSettings,
} from "./model.ts";
import {
  type BadBoot,
  badBootFromLabels,
  bootHost,
  type BootRecord,
  effectiveBadBoot,
  formatBadBoot,
  initialBootRecord,
  parseBadBoot,
} from "./bad_boot.ts";
import { parseImageReference } from "../../lib/registry/mod.ts";
import {
  type ApplyRecord,
  type ApplyVerdict,
  readApplyRecords,
  writeApplyVerdict,
} from "./apply_gate.ts";
import { pullImage, readHostAuth } from "./registry_pull.ts";
import { buildHost, type Json } from "./status.ts";
import {
  createLayout,
  lockOwner,
  lockSysroot,
  readHostState,
  readSettings,
  readUnits,
  type SimPaths,
  simPaths,
  syncComposefsDeployDirs,
  writeHostState,
  writeSettings,
  writeUnits,
} from "./store.ts";
import { initialUnits, rebootUnits, type UnitsState } from "./systemctl.ts";

/** Options for {@linkcode SimulatedHost.create}. */
export interface CreateHostOptions {
  /** The host's root directory; a temporary directory (removed by `destroy`) when omitted. */
  root?: string;
  /** The initially booted image pullspec; it is pulled from its registry for digest and version. */
  image: string;
  /** Host architecture (default `amd64`). */
  architecture?: string;
  /** bootc version (default `1.16.10`). */
  bootcVersion?: string;
  /** Whether newly staged deployments are soft-reboot capable (default false). */
  softRebootCapable?: boolean;
  /**
   * Registries reached over plain HTTP. Default: the initial image's registry when it is on
   * loopback (`127.0.0.1`, `localhost`, `[::1]`) and no `caCertPem` is given, else none.
   */
  insecureRegistries?: string[];
  /** `bootc-fetch-apply-updates.timer` enabled and active (default true, like Fedora images). */
  autoUpdateTimerEnabled?: boolean;
  /** composefs-native backend (default false: ostree). */
  composefs?: boolean;
  /** How long a pull holds the sysroot lock beyond the registry round trips (default 0). */
  pullDelayMs?: number;
  /** An extra CA (PEM) the host trusts (for a registry started with `tls: true`). */
  caCertPem?: string;
  /**
   * Every `--apply` waits for the harness's verdict ({@linkcode SimulatedHost.answerApply})
   * before it asks for a reboot (default false). See `apply_gate.ts`.
   */
  applyGate?: boolean;
  /** Auth file to place at `/etc/ostree/auth.json` before the initial pull. */
  etcAuth?: AuthJson;
  /**
   * Per-host bad-boot overrides: image digest or pullspec → a `dev.bootc.sim.bad-boot` value
   * (see `bad_boot.ts`); they win over the images' labels.
   */
  badBoot?: Record<string, string>;
  /** How long after each boot systemd is still `starting` (default 0). */
  startingMs?: number;
}

/** A containers-auth.json document. */
export interface AuthJson {
  /** Credentials per registry. */
  auths: Record<string, { auth: string }>;
}

/** Everything the simulator keeps about a host. */
export interface SimulatedHostSnapshot {
  /** Deployments and boot state. */
  state: HostState;
  /** Machine settings. */
  settings: SimSettings;
  /** systemd units. */
  units: UnitsState;
}

const MAIN = new URL("./main.ts", import.meta.url).pathname;
// Explicit, so the `yaml` import map entry resolves whatever the caller's working directory is.
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

function isLoopback(registry: string): boolean {
  const host = registry.replace(/:\d+$/, "");
  return host === "127.0.0.1" || host === "localhost" || host === "[::1]";
}

/** A simulated bootc host. */
export class SimulatedHost {
  /** The host's root filesystem directory. */
  readonly root: string;
  /** The simulator's files. */
  readonly paths: SimPaths;
  #ownsRoot: boolean;

  private constructor(root: string, ownsRoot: boolean) {
    this.root = root;
    this.paths = simPaths(root);
    this.#ownsRoot = ownsRoot;
  }

  /** Creates a host booted into `opts.image` (pulled from its registry now). */
  static async create(opts: CreateHostOptions): Promise<SimulatedHost> {
    const ownsRoot = opts.root === undefined;
    const root = opts.root ?? await Deno.makeTempDir({ prefix: "bootc-sim-" });
    const host = new SimulatedHost(root, ownsRoot);
    try {
      const registry = parseImageReference(opts.image).registry;
      const settings: SimSettings = {
        ...DEFAULT_SETTINGS,
        architecture: opts.architecture ?? DEFAULT_SETTINGS.architecture,
        bootcVersion: opts.bootcVersion ?? DEFAULT_SETTINGS.bootcVersion,
        softRebootCapable: opts.softRebootCapable ?? false,
        insecureRegistries: opts.insecureRegistries ??
          (isLoopback(registry) && !opts.caCertPem ? [registry] : []),
        composefs: opts.composefs ?? false,
        pullDelayMs: opts.pullDelayMs ?? 0,
        caCertPem: opts.caCertPem ?? null,
        applyGate: opts.applyGate ?? false,
        startingMs: opts.startingMs ?? 0,
        badBoot: { ...opts.badBoot },
      };
      // A malformed override fails now, not at the next boot.
      for (const value of Object.values(settings.badBoot)) parseBadBoot(value);
      await createLayout(host.paths, settings.composefs);
      await writeDefaultPolicy(root);
      if (opts.etcAuth) await host.writeAuthFile("etc", opts.etcAuth);
      const image = await pullImage({
        pullspec: opts.image,
        architecture: settings.architecture,
        insecureRegistries: settings.insecureRegistries,
        auth: await readHostAuth(root),
        caCertPem: settings.caCertPem,
      });
      const booted = newDeployment({
        state: initialState(null, ""),
        pullspec: opts.image,
        image,
        checksum: await checksumFor(image.imageDigest),
        softRebootCapable: settings.softRebootCapable,
        downloadOnly: false,
        badBoot: badBootFromLabels(image.labels),
      });
      const now = new Date().toISOString();
      const state = initialState(booted, crypto.randomUUID(), now);
      const lastBoot = initialBootRecord(state, { now, overrides: settings.badBoot });
      await writeSettings(host.paths, settings);
      await writeUnits(
        host.paths,
        rebootUnits(initialUnits(opts.autoUpdateTimerEnabled ?? true), false, {
          failedUnit: lastBoot.failedUnit,
          bootCheck: lastBoot.bootCheckFailed,
        }),
      );
      await writeHostState(host.paths, { ...state, lastBoot });
      if (settings.composefs) {
        await syncComposefsDeployDirs(host.paths, [booted.checksum + booted.checksum]);
      }
      return host;
    } catch (e) {
      if (ownsRoot) await Deno.remove(root, { recursive: true }).catch(() => {});
      throw e;
    }
  }

  /** The argv that runs this host's `bootc` (append bootc's arguments). */
  command(): string[] {
    return [
      // The running Deno, not `deno` from PATH: a machine may run Deno only through npx.
      Deno.execPath(),
      "run",
      "--allow-all",
      "--quiet",
      "--config",
      CONFIG,
      MAIN,
      "--sim-root",
      this.root,
    ];
  }

  /** The argv that runs this host's `systemctl` (append systemctl's arguments). */
  systemctlCommand(): string[] {
    return [...this.command(), "systemctl"];
  }

  /** The argv that runs this host's `systemd-bless-boot` (append `status`). */
  blessBootCommand(): string[] {
    return [...this.command(), "bless-boot"];
  }

  /** Reads everything the simulator keeps (no lock needed: files are replaced atomically). */
  async readState(): Promise<SimulatedHostSnapshot> {
    return {
      state: await readHostState(this.paths),
      settings: await readSettings(this.paths),
      units: await readUnits(this.paths),
    };
  }

  /** The `BootcHost` object `bootc status --format=json` would print now (without locking). */
  async status(): Promise<{ [key: string]: Json }> {
    const { state, settings } = await this.readState();
    return buildHost({ state, settings });
  }

  /** Whether a `--apply` asked for a reboot that has not happened yet. */
  async rebootRequested(): Promise<boolean> {
    return (await this.rebootRequest()) !== null;
  }

  /** The pending reboot request, if any. */
  async rebootRequest(): Promise<RebootRequest | null> {
    return (await readHostState(this.paths)).rebootRequest;
  }

  /** Polls until a reboot is requested; throws after `timeoutMs` (default 30 s). */
  async waitForRebootRequest(
    opts: { timeoutMs?: number; intervalMs?: number } = {},
  ): Promise<RebootRequest> {
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    for (;;) {
      const req = await this.rebootRequest();
      if (req) return req;
      if (Date.now() > deadline) throw new Error(`no reboot requested on ${this.root}`);
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
    }
  }

  /** Every `--apply` invocation recorded so far, oldest first, with the verdict once given. */
  applyInvocations(): Promise<ApplyRecord[]> {
    return readApplyRecords(this.paths);
  }

  /** The recorded `--apply` invocations that have no verdict yet (gated ones are waiting). */
  async pendingApplies(): Promise<ApplyRecord[]> {
    return await readApplyRecords(this.paths, { pendingOnly: true });
  }

  /** Records the harness's verdict on an invocation; a gated `--apply` then proceeds. */
  answerApply(id: string, verdict: Omit<ApplyVerdict, "judgedAt">): Promise<void> {
    return writeApplyVerdict(this.paths, id, { ...verdict, judgedAt: new Date().toISOString() });
  }

  /** Turns the apply gate on or off (takes effect for the next bootc call). */
  setApplyGate(on: boolean): Promise<void> {
    return this.updateSettings({ applyGate: on });
  }

  /** The current boot ID (also in `<root>/proc/sys/kernel/random/boot_id`). */
  async bootId(): Promise<string> {
    return (await readHostState(this.paths)).bootId;
  }

  /** mtime of `/ostree/bootc`, or null when it does not exist (composefs). */
  async bootcDirMtime(): Promise<Date | null> {
    try {
      return (await Deno.stat(this.paths.bootcDir)).mtime;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }

  /**
   * Boots the machine once. Kill every bootc process of this host first (a pending `--apply`
   * holds the sysroot lock until killed); this throws if one still holds it.
   *
   * `soft` defaults to what the pending request asked for, else whether the staged deployment was
   * prepared for a soft reboot. A soft reboot keeps the boot ID and `/run`; a full reboot gets a
   * new boot ID and empties `/run` (runtime masks and `/run/ostree/auth.json` are gone).
   *
   * When the deployment that boots is a bad image (`bad_boot.ts`), the record says what became of
   * the boot: `up` (maybe with a failed unit, or never Ready), `fell-back` (the previous
   * deployment runs again) or `crashed` (a `reboot-loop` image: the machine reboots by itself, so
   * call `reboot()` again to perform that next boot).
   */
  async reboot(opts: { soft?: boolean } = {}): Promise<BootRecord> {
    const owner = await lockOwner(this.paths);
    if (owner) {
      throw new Error(
        `bootc process ${owner.pid} (${
          owner.argv.join(" ")
        }) still holds the sysroot lock; kill it before rebooting`,
      );
    }
    const lock = await lockSysroot(this.paths, ["reboot"]);
    try {
      const state = await readHostState(this.paths);
      const soft = opts.soft ?? state.rebootRequest?.soft ?? state.staged?.softRebootPrepared ??
        false;
      const settings = await readSettings(this.paths);
      const next = bootHost(state, {
        soft,
        newBootId: crypto.randomUUID(),
        now: new Date().toISOString(),
        overrides: settings.badBoot,
      });
      const record = next.lastBoot!;
      if (!record.soft) {
        for await (const entry of Deno.readDir(`${this.root}/run`)) {
          await Deno.remove(`${this.root}/run/${entry.name}`, { recursive: true });
        }
      }
      await writeUnits(
        this.paths,
        rebootUnits(await readUnits(this.paths), record.soft, {
          failedUnit: record.failedUnit,
          bootCheck: record.bootCheckFailed,
        }),
      );
      await writeHostState(this.paths, next);
      if (settings.composefs) {
        const verities = [next.staged, next.booted, next.rollback, ...next.other]
          .filter((d) => d !== null).map((d) => d!.checksum + d!.checksum);
        await syncComposefsDeployDirs(this.paths, verities);
      }
      return record;
    } finally {
      await lock.release();
    }
  }

  /** What the latest boot came to (`bad_boot.ts`); for a host never rebooted, its creation. */
  async lastBoot(): Promise<BootRecord | null> {
    return (await readHostState(this.paths)).lastBoot ?? null;
  }

  /**
   * The bad-boot mode that applies to the booted deployment (its image's label or this host's
   * override); null for a good one.
   */
  async bootedBadBoot(): Promise<BadBoot | null> {
    const { state, settings } = await this.readState();
    return effectiveBadBoot(state.booted, settings.badBoot);
  }

  /**
   * Overrides the bad-boot mode of an image on this host only (by image digest or pullspec), for
   * the boots that come after: a mode (`"never-ready"`, `{ mode: "unit-fails", unit }`, …),
   * `"none"` to make a labelled image good here, or null to drop the override.
   */
  async setBadBoot(imageDigestOrPullspec: string, mode: string | BadBoot | null): Promise<void> {
    const value = mode === null || typeof mode === "string" ? mode : formatBadBoot(mode);
    if (value !== null) parseBadBoot(value);
    const overrides = { ...(await readSettings(this.paths)).badBoot };
    if (value === null) delete overrides[imageDigestOrPullspec];
    else overrides[imageDigestOrPullspec] = value;
    await this.updateSettings({ badBoot: overrides });
  }

  /** The live bootc process holding the sysroot lock (a pull, an `--apply`), or null. */
  lockHolder(): Promise<{ pid: number; argv: string[] } | null> {
    return lockOwner(this.paths);
  }

  /**
   * SIGKILLs the bootc process holding the sysroot lock (a pending `--apply`), as systemd does at
   * reboot, and waits until it is gone. Returns its pid, or null when no process held the lock.
   */
  async killLockHolder(opts: { timeoutMs?: number } = {}): Promise<number | null> {
    const owner = await lockOwner(this.paths);
    if (!owner) return null;
    try {
      Deno.kill(owner.pid, "SIGKILL");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
    while (await lockOwner(this.paths)) {
      if (Date.now() > deadline) throw new Error(`bootc process ${owner.pid} did not die`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return owner.pid;
  }

  /**
   * Edits the deployments under the sysroot lock, for states bootc cannot reach by itself in a
   * test (e.g. an `incompatible` or `pinned` deployment, a `usrOverlay`).
   */
  async editState(edit: (state: HostState) => HostState): Promise<void> {
    const lock = await lockSysroot(this.paths, ["editState"]);
    try {
      await writeHostState(this.paths, edit(await readHostState(this.paths)));
    } finally {
      await lock.release();
    }
  }

  /** Changes machine settings (takes effect for the next bootc call). */
  async updateSettings(patch: Partial<SimSettings>): Promise<void> {
    await writeSettings(this.paths, { ...await readSettings(this.paths), ...patch });
  }

  /** Makes `bootc status` fail with `error: Status: <message>` (null: succeed again). */
  setStatusFailure(message: string | null): Promise<void> {
    return this.updateSettings({ statusFailure: message });
  }

  /** Sets how long pulls hold the sysroot lock. */
  setPullDelayMs(ms: number): Promise<void> {
    return this.updateSettings({ pullDelayMs: ms });
  }

  /** Sets the simulated bootc version. */
  setBootcVersion(version: string): Promise<void> {
    return this.updateSettings({ bootcVersion: version });
  }

  /** Sets whether newly staged deployments are soft-reboot capable. */
  setSoftRebootCapable(capable: boolean): Promise<void> {
    return this.updateSettings({ softRebootCapable: capable });
  }

  /** Makes bootc believe it runs in a container (status: empty host, exit 0). */
  setInContainer(inContainer: boolean): Promise<void> {
    return this.updateSettings({ inContainer });
  }

  /** Makes the machine a non-bootc host (status: empty host, exit 0). */
  setNotBootc(notBootc: boolean): Promise<void> {
    return this.updateSettings({ notBootc });
  }

  /** Writes a host auth file: `run` → /run/ostree, `etc` → /etc/ostree, `usr` → /usr/lib/ostree. */
  async writeAuthFile(where: "run" | "etc" | "usr", auth: AuthJson): Promise<void> {
    const dir = { run: "run/ostree", etc: "etc/ostree", usr: "usr/lib/ostree" }[where];
    await Deno.mkdir(`${this.root}/${dir}`, { recursive: true });
    await Deno.writeTextFile(`${this.root}/${dir}/auth.json`, JSON.stringify(auth));
  }

  /**
   * Makes a unit fail now, as if it crashed on the running host (created when unknown): systemctl
   * then reports it `failed` and the system `degraded` until a reboot or `reset-failed`.
   */
  async failUnit(name: string): Promise<void> {
    const units = await readUnits(this.paths);
    const u = units[name] ??
      { enabled: true, active: false, masked: false, runtimeMasked: false, description: name };
    await writeUnits(this.paths, { ...units, [name]: { ...u, active: false, failed: true } });
  }

  /** Sets how long after each boot `systemctl is-system-running` says `starting` (default 0). */
  setStartingMs(ms: number): Promise<void> {
    return this.updateSettings({ startingMs: ms });
  }

  /** Changes the units directly (e.g. to simulate an admin). */
  async setUnits(units: UnitsState): Promise<void> {
    await writeUnits(this.paths, units);
  }

  /** Removes the host's root if `create` made it. */
  async destroy(): Promise<void> {
    if (this.#ownsRoot) await Deno.remove(this.root, { recursive: true }).catch(() => {});
  }
}

/** Fedora's containers-common policy: any image is accepted unless a scope says otherwise. */
const DEFAULT_POLICY = {
  default: [{ type: "insecureAcceptAnything" }],
  transports: { "docker-daemon": { "": [{ type: "insecureAcceptAnything" }] } },
};

/** Writes the image's default `/etc/containers/policy.json`, unless the root has one. */
async function writeDefaultPolicy(root: string): Promise<void> {
  await Deno.mkdir(`${root}/etc/containers`, { recursive: true });
  try {
    await Deno.writeTextFile(
      `${root}/etc/containers/policy.json`,
      `${JSON.stringify(DEFAULT_POLICY, null, 2)}\n`,
      { createNew: true },
    );
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
}
