/**
 * The simulated host's files: state, settings and units under `<root>/.bootc-sim/`, the sysroot
 * lock, `/ostree/bootc` (whose mtime bootc touches), the composefs deploy directory and the boot ID.
 *
 * State files are replaced atomically (write + rename), so readers never need the lock.
 *
 * @module
 */

import type { HostState, SimSettings } from "./model.ts";
import { DEFAULT_SETTINGS } from "./model.ts";
import type { UnitsState } from "./systemctl.ts";

/** Paths of one simulated host. */
export interface SimPaths {
  /** The host's root filesystem. */
  root: string;
  /** Simulator bookkeeping. */
  simDir: string;
  /** Deployments and boot state. */
  state: string;
  /** Harness-owned machine settings. */
  settings: string;
  /** systemd units. */
  units: string;
  /** The sysroot lock file (flock, like ostree's). */
  lock: string;
  /** Who holds the lock (pid and argv), for diagnostics. */
  lockOwner: string;
  /** `/sysroot/ostree/bootc`, reached by bootc users as `/ostree/bootc`. */
  bootcDir: string;
  /** composefs: `/sysroot/state/deploy`. */
  composefsDeployDir: string;
  /** `/proc/sys/kernel/random/boot_id`. */
  bootIdFile: string;
  /** Recorded `--apply` invocations and the harness's verdicts on them (`apply_gate.ts`). */
  appliesDir: string;
}

/** The paths of a simulated host rooted at `root`. */
export function simPaths(root: string): SimPaths {
  const simDir = `${root}/.bootc-sim`;
  return {
    root,
    simDir,
    state: `${simDir}/state.json`,
    settings: `${simDir}/settings.json`,
    units: `${simDir}/units.json`,
    lock: `${simDir}/sysroot.lock`,
    lockOwner: `${simDir}/sysroot.lock.owner`,
    bootcDir: `${root}/sysroot/ostree/bootc`,
    composefsDeployDir: `${root}/sysroot/state/deploy`,
    bootIdFile: `${root}/proc/sys/kernel/random/boot_id`,
    appliesDir: `${simDir}/applies`,
  };
}

/** Replaces `path` with `text` atomically (write a temporary file, rename it over). */
export async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${Deno.pid}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(tmp, text);
  await Deno.rename(tmp, path);
}

/** Reads the deployments state. */
export async function readHostState(paths: SimPaths): Promise<HostState> {
  return JSON.parse(await Deno.readTextFile(paths.state)) as HostState;
}

/** Writes the deployments state (and the boot ID file it implies). */
export async function writeHostState(paths: SimPaths, state: HostState): Promise<void> {
  await writeAtomic(paths.state, JSON.stringify(state, null, 2) + "\n");
  await writeAtomic(paths.bootIdFile, state.bootId + "\n");
}

/** Reads the machine settings (defaults for missing keys). */
export async function readSettings(paths: SimPaths): Promise<SimSettings> {
  const raw = JSON.parse(await Deno.readTextFile(paths.settings)) as Partial<SimSettings>;
  return { ...DEFAULT_SETTINGS, ...raw };
}

/** Writes the machine settings. */
export async function writeSettings(paths: SimPaths, settings: SimSettings): Promise<void> {
  await writeAtomic(paths.settings, JSON.stringify(settings, null, 2) + "\n");
}

/** Reads the systemd units. */
export async function readUnits(paths: SimPaths): Promise<UnitsState> {
  return JSON.parse(await Deno.readTextFile(paths.units)) as UnitsState;
}

/** Writes the systemd units. */
export async function writeUnits(paths: SimPaths, units: UnitsState): Promise<void> {
  await writeAtomic(paths.units, JSON.stringify(units, null, 2) + "\n");
}

/**
 * Creates the host's directory layout. ostree hosts get `/sysroot/ostree/bootc` and the `/ostree`
 * symlink to `sysroot/ostree`; composefs hosts have neither, only `/sysroot/state/deploy`.
 */
export async function createLayout(paths: SimPaths, composefs: boolean): Promise<void> {
  await Deno.mkdir(paths.simDir, { recursive: true });
  await Deno.mkdir(paths.appliesDir, { recursive: true });
  await Deno.mkdir(`${paths.root}/proc/sys/kernel/random`, { recursive: true });
  await Deno.mkdir(`${paths.root}/run`, { recursive: true });
  await Deno.mkdir(`${paths.root}/etc`, { recursive: true });
  if (composefs) {
    await Deno.mkdir(paths.composefsDeployDir, { recursive: true });
  } else {
    await Deno.mkdir(paths.bootcDir, { recursive: true });
    try {
      await Deno.symlink("sysroot/ostree", `${paths.root}/ostree`);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
  }
  await Deno.writeTextFile(paths.lock, "", { append: true });
}

/**
 * bootc's `update_mtime`: touches `/sysroot/ostree/bootc` so watchers notice. A no-op on composefs
 * hosts, where the directory does not exist.
 */
export async function touchBootcDir(paths: SimPaths): Promise<void> {
  const now = new Date();
  try {
    await Deno.utime(paths.bootcDir, now, now);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** composefs: keeps one directory per deployment under `/sysroot/state/deploy`. */
export async function syncComposefsDeployDirs(paths: SimPaths, verities: string[]): Promise<void> {
  const want = new Set(verities);
  for await (const entry of Deno.readDir(paths.composefsDeployDir)) {
    if (!want.has(entry.name)) {
      await Deno.remove(`${paths.composefsDeployDir}/${entry.name}`, { recursive: true });
    }
  }
  for (const v of want) await Deno.mkdir(`${paths.composefsDeployDir}/${v}`, { recursive: true });
}

/** A held sysroot lock. */
export interface SysrootLock {
  /** Releases the lock. */
  release(): Promise<void>;
}

/** Takes the sysroot lock (exclusive flock, like ostree's), waiting while another holds it. */
export async function lockSysroot(paths: SimPaths, argv: string[]): Promise<SysrootLock> {
  const file = await Deno.open(paths.lock, { read: true, write: true, create: true });
  try {
    await file.lock(true);
  } catch (e) {
    file.close();
    throw e;
  }
  // The pid namespace too: a simulator run inside a test node's namespace has a pid that means
  // another process (or none) in this machine's /proc.
  const pidNamespace = await Deno.readLink("/proc/self/ns/pid").catch(() => undefined);
  await Deno.writeTextFile(
    paths.lockOwner,
    JSON.stringify({ pid: Deno.pid, argv, pidNamespace }) + "\n",
  );
  return {
    release: async () => {
      try {
        await Deno.remove(paths.lockOwner);
      } catch {
        // already gone
      }
      await file.unlock();
      file.close();
    },
  };
}

/** The live process holding the sysroot lock, if any (from the owner file). */
export async function lockOwner(paths: SimPaths): Promise<{ pid: number; argv: string[] } | null> {
  let owner: { pid: number; argv: string[]; pidNamespace?: string };
  try {
    owner = JSON.parse(await Deno.readTextFile(paths.lockOwner));
  } catch {
    return null;
  }
  try {
    // Written from another pid namespace (a test node's): only a process of that namespace
    // with that pid is the owner; the namespace is gone when the node's init died.
    if (owner.pidNamespace) {
      const ns = await Deno.readLink(`/proc/${owner.pid}/ns/pid`).catch(() => undefined);
      if (ns !== owner.pidNamespace) return null;
    }
    // A zombie (killed, not yet reaped by its parent) holds no lock any more.
    const stat = await Deno.readTextFile(`/proc/${owner.pid}/stat`);
    const procState = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return procState === "Z" || procState === "X" ? null : owner;
  } catch {
    return null;
  }
}
