/**
 * The host's change signal: bootc touches the mtime of `/ostree/bootc`
 * (physically `/sysroot/ostree/bootc`) after switch, a changing upgrade,
 * rollback and edit. On composefs hosts that directory may be missing (or a
 * dangling link) and deployments show up under `/sysroot/state/deploy`
 * instead. The watcher follows whichever exists below the host root,
 * debounces events, and looks for a target again when the watch ends or none
 * exists yet. It is only a hint: the agent also polls and re-reads status
 * after its own commands (bootc does not touch the directory for
 * `--from-downloaded` or for locking).
 *
 * @module
 */
import { type Clock, systemClock } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/log.ts";

/** Paths (relative to the host root) watched for bootc changes, in order of preference. */
export const WATCH_CANDIDATES = ["ostree/bootc", "sysroot/state/deploy"] as const;

/**
 * Resolves `path` (relative to the host root) inside `root`, following
 * symbolic links the way the host would: an absolute link target is taken
 * relative to `root`, not to the daemon's own root (which matters below
 * `/proc/1/root`). Returns undefined when the path does not exist.
 */
export async function resolveInRoot(root: string, path: string): Promise<string | undefined> {
  const base = root.replace(/\/+$/, "");
  let pending = path.split("/").filter((p) => p !== "" && p !== ".");
  const resolved: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === "..") {
      resolved.pop();
      continue;
    }
    const candidate = `${base}/${[...resolved, part].join("/")}`;
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(candidate);
    } catch {
      return undefined;
    }
    if (!info.isSymlink) {
      resolved.push(part);
      continue;
    }
    if (++hops > 40) return undefined;
    const target = await Deno.readLink(candidate);
    const targetParts = target.split("/").filter((p) => p !== "" && p !== ".");
    if (target.startsWith("/")) resolved.length = 0;
    pending = [...targetParts, ...pending];
  }
  return `${base}/${resolved.join("/")}`.replace(/\/+$/, "") || "/";
}

/** The directory to watch below `hostRoot`, or undefined when none exists. */
export async function findWatchTarget(hostRoot: string): Promise<string | undefined> {
  for (const candidate of WATCH_CANDIDATES) {
    const path = await resolveInRoot(hostRoot, candidate);
    if (!path) continue;
    try {
      if ((await Deno.stat(path)).isDirectory) return path;
    } catch {
      // Vanished meanwhile.
    }
  }
  return undefined;
}

/** Options of {@linkcode watchHost}. */
export interface HostWatchOptions {
  /** The host's root as seen by the daemon. */
  hostRoot: string;
  /** Called (debounced) after changes. */
  onChange: () => void;
  /** Quiet time before `onChange` fires (default 500 ms). */
  debounceMs?: number;
  /** How often to look for a target again when none exists (default 60 s). */
  retryMs?: number;
  /** Called with the watched path (or undefined) whenever the target changes; for logs and tests. */
  onTarget?: (path: string | undefined) => void;
  clock?: Clock;
  logger?: Logger;
}

/** Watches the host for bootc changes until `signal` aborts. */
export async function watchHost(options: HostWatchOptions, signal: AbortSignal): Promise<void> {
  const clock = options.clock ?? systemClock;
  const log = options.logger ?? silentLogger;
  const debounceMs = options.debounceMs ?? 500;
  const retryMs = options.retryMs ?? 60_000;
  let lastTarget: string | undefined | null = null;
  while (!signal.aborted) {
    const target = await findWatchTarget(options.hostRoot);
    if (target !== lastTarget) {
      lastTarget = target;
      options.onTarget?.(target);
      if (target) log.info("watching host for bootc changes", { path: target });
      else {log.info("no bootc change signal on this host; relying on polling", {
          hostRoot: options.hostRoot,
        });}
    }
    if (!target) {
      try {
        await clock.sleep(retryMs, signal);
      } catch {
        return;
      }
      continue;
    }
    await watchOne(target, options.onChange, debounceMs, signal, log);
    if (signal.aborted) return;
    // The watch ended (target removed, events lost): a change may have been missed.
    options.onChange();
    try {
      await clock.sleep(Math.min(retryMs, 1_000), signal);
    } catch {
      return;
    }
  }
}

async function watchOne(
  path: string,
  onChange: () => void,
  debounceMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  let watcher: Deno.FsWatcher;
  try {
    watcher = Deno.watchFs(path, { recursive: false });
  } catch (e) {
    log.warn("cannot watch host path", { path, error: e });
    return;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const close = () => {
    try {
      watcher.close();
    } catch {
      // Already closed.
    }
  };
  signal.addEventListener("abort", close, { once: true });
  try {
    for await (const event of watcher) {
      if (event.kind === "access") continue;
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
      // A removed directory will not report again: look for the target anew.
      if (event.kind === "remove" && event.paths.includes(path)) break;
    }
  } catch (e) {
    if (!signal.aborted) log.warn("host watch failed", { path, error: e });
  } finally {
    if (timer !== undefined) {
      clearTimeout(timer);
      if (!signal.aborted) onChange();
    }
    signal.removeEventListener("abort", close);
    close();
  }
}
