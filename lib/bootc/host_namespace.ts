/**
 * How the daemon reaches the host: does it run in the host's mount namespace
 * (standalone on the host: run `bootc` directly, the host's root is `/`), or
 * in another one (a privileged `hostPID` pod: enter the host's namespace with
 * `nsenter --mount=/proc/1/ns/mnt --`, see the host's files below
 * `/proc/1/root`)?
 *
 * The answer comes from comparing the links `/proc/self/ns/mnt` and
 * `/proc/<pid>/ns/mnt` (PID 1 by default, whose namespace is the host's): equal
 * links name the same namespace. Reading PID 1's link needs the same access
 * (`ptrace` read access to PID 1) that `nsenter` needs to enter it, so when the
 * link cannot be read, entering is impossible anyway: the daemon then runs host
 * commands directly, and says why. Explicit settings (`--host-exec-prefix`,
 * `--host-root`) always win over what is detected.
 *
 * {@linkcode planHostAccess} is the pure decision; {@linkcode detectHostAccess}
 * reads the links and calls it.
 *
 * @module
 */

/** What reading one `/proc/<pid>/ns/mnt` link gave. */
export type NamespaceRead =
  | { ok: true; link: string }
  | { ok: false; error: string };

/** How the host was reached, and why. */
export type HostAccessMode =
  /** The daemon runs in the host's mount namespace: no prefix, host root `/`. */
  | "host"
  /** Another namespace: commands go through `nsenter`, files through `/proc/<pid>/root`. */
  | "nsenter"
  /** The host's namespace link cannot be read: commands run directly (nsenter could not enter it either). */
  | "unreadable"
  /** Both the prefix and the host root were given: nothing was detected. */
  | "explicit";

/** The outcome of {@linkcode planHostAccess}. */
export interface HostAccess {
  mode: HostAccessMode;
  /** Put before every host command (`[]`: run directly). */
  hostExecPrefix: string[];
  /** The host's root as seen by the daemon. */
  hostRoot: string;
  /** One sentence for the log: what was found and what follows from it. */
  reason: string;
  /** True when the decision rests on an assumption the operator should know about. */
  warning: boolean;
}

/** Input of {@linkcode planHostAccess}. */
export interface PlanHostAccessInput {
  /** The process whose mount namespace is the host's (1 in a `hostPID` pod). */
  hostPid: number;
  /** The daemon's own `/proc/self/ns/mnt`. */
  self?: NamespaceRead;
  /** `/proc/<hostPid>/ns/mnt`. */
  target?: NamespaceRead;
  /** An explicit `--host-exec-prefix` (`[]` included), overriding detection. */
  hostExecPrefix?: string[];
  /** An explicit `--host-root`, overriding detection. */
  hostRoot?: string;
}

/** The argv prefix that runs a command in the mount namespace of `pid`. */
export function nsenterPrefix(pid: number): string[] {
  return ["nsenter", `--mount=/proc/${pid}/ns/mnt`, "--"];
}

/** `/proc/<pid>/ns/mnt`. */
export function mountNamespacePath(pid: number | "self"): string {
  return `/proc/${pid}/ns/mnt`;
}

function overrides(input: PlanHostAccessInput): string {
  const given = [
    input.hostExecPrefix !== undefined ? "--host-exec-prefix" : undefined,
    input.hostRoot !== undefined ? "--host-root" : undefined,
  ].filter((x) => x !== undefined);
  return given.length ? ` (${given.join(" and ")} given explicitly)` : "";
}

/** Decides how to reach the host from what was read (pure). */
export function planHostAccess(input: PlanHostAccessInput): HostAccess {
  const { hostPid } = input;
  if (input.hostExecPrefix !== undefined && input.hostRoot !== undefined) {
    return {
      mode: "explicit",
      hostExecPrefix: input.hostExecPrefix,
      hostRoot: input.hostRoot,
      reason: "host access set explicitly (--host-exec-prefix and --host-root)",
      warning: false,
    };
  }
  const targetPath = mountNamespacePath(hostPid);
  const finish = (
    mode: HostAccessMode,
    prefix: string[],
    root: string,
    reason: string,
    warning = false,
  ): HostAccess => ({
    mode,
    hostExecPrefix: input.hostExecPrefix ?? prefix,
    hostRoot: input.hostRoot ?? root,
    reason: reason + overrides(input),
    warning,
  });
  const self = input.self;
  const target = input.target;
  if (!self?.ok || !target?.ok) {
    const [path, read] = !self?.ok ? [mountNamespacePath("self"), self] : [targetPath, target];
    const what = `cannot read ${path}: ${read && !read.ok ? read.error : "not read"}`;
    return finish(
      "unreadable",
      [],
      "/",
      `${what}; so it cannot tell whether this is the host's mount namespace; entering PID ` +
        `${hostPid}'s namespace needs the same access, so host commands run directly and the ` +
        "host's root is /; set --host-exec-prefix and --host-root (or --host-pid) to override",
      true,
    );
  }
  if (self.link === target.link) {
    return finish(
      "host",
      [],
      "/",
      `running in the host's mount namespace (${self.link}, the same as PID ${hostPid}'s): ` +
        "host commands run directly, the host's root is /",
    );
  }
  return finish(
    "nsenter",
    nsenterPrefix(hostPid),
    `/proc/${hostPid}/root`,
    `running in mount namespace ${self.link}, not PID ${hostPid}'s ${target.link}: host ` +
      `commands enter it with ${nsenterPrefix(hostPid).join(" ")}, the host's root is ` +
      `/proc/${hostPid}/root`,
  );
}

/** Reads the link `/proc/<pid>/ns/mnt` (`procRoot` replaces `/proc` in tests). */
export async function readMountNamespace(
  pid: number | "self",
  procRoot = "/proc",
): Promise<NamespaceRead> {
  const path = `${procRoot}/${pid}/ns/mnt`;
  try {
    return { ok: true, link: await Deno.readLink(path) };
  } catch (e) {
    if (e instanceof Deno.errors.PermissionDenied) {
      return {
        ok: false,
        error: `permission denied, this process may not inspect PID ${pid}` +
          ` (not root, no CAP_SYS_PTRACE, or PID ${pid} is protected from it)`,
      };
    }
    if (e instanceof Deno.errors.NotFound) {
      return {
        ok: false,
        error: pid === "self"
          ? "not found: /proc is not mounted"
          : `not found: no process ${pid} in this PID namespace, or /proc is not mounted`,
      };
    }
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/** Options of {@linkcode detectHostAccess}. */
export interface DetectHostAccessOptions {
  /** The process whose mount namespace is the host's (default 1). */
  hostPid?: number;
  /** Explicit prefix (overrides detection). */
  hostExecPrefix?: string[];
  /** Explicit host root (overrides detection). */
  hostRoot?: string;
  /** Replaces `/proc` (tests). */
  procRoot?: string;
}

/** Detects how to reach the host; reads nothing when both settings are explicit. */
export async function detectHostAccess(
  options: DetectHostAccessOptions = {},
): Promise<HostAccess> {
  const hostPid = options.hostPid ?? 1;
  const input: PlanHostAccessInput = {
    hostPid,
    hostExecPrefix: options.hostExecPrefix,
    hostRoot: options.hostRoot,
  };
  if (options.hostExecPrefix === undefined || options.hostRoot === undefined) {
    [input.self, input.target] = await Promise.all([
      readMountNamespace("self", options.procRoot),
      readMountNamespace(hostPid, options.procRoot),
    ]);
  }
  return planHostAccess(input);
}
