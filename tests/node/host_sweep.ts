/**
 * Undoing what a real test node did to the machine: its processes (containerd's shims and the
 * containers, which outlive containerd), mounts under its folder, its cgroups and the kubelet's
 * links in /var/log/containers. The parsers are pure; {@linkcode sweepNode} does the I/O.
 *
 * @module
 */

/** Mount points (from /proc/self/mountinfo text) at or below `dir`, deepest first. */
export function mountsBelow(mountinfo: string, dir: string): string[] {
  const points = mountinfo.split("\n").filter(Boolean).map((line) =>
    // Field 5 is the mount point, with space, tab, newline and backslash octal-escaped.
    line.split(" ")[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)))
  );
  const below = points.filter((p) => p === dir || p.startsWith(`${dir}/`));
  // Unmount children before parents; a point mounted twice is listed twice.
  return below.sort((a, b) => b.split("/").length - a.split("/").length);
}

/** True when /proc/<pid>/cgroup text puts the process in `cgroupRoot` or below, in any hierarchy. */
export function inCgroup(procCgroup: string, cgroupRoot: string): boolean {
  return procCgroup.split("\n").some((line) => {
    const path = line.split(":").slice(2).join(":");
    return path === cgroupRoot || path.startsWith(`${cgroupRoot}/`);
  });
}

/** What {@linkcode sweepNode} looks for. */
export interface SweepTarget {
  /** The node's folder: processes naming it on their command line, mounts below it. */
  dir: string;
  /** The node's cgroup root: processes in it, and the cgroups themselves. */
  cgroupRoot: string;
}

async function readOrEmpty(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return ""; // the process is gone, or the file is not ours to read
  }
}

/** Pids of processes (never this one) whose command line contains `text`, or that `also` picks. */
export async function pidsNaming(
  text: string,
  also: (pid: number) => Promise<boolean> = () => Promise.resolve(false),
): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid) || pid === Deno.pid) continue;
    const cmdline = (await readOrEmpty(`/proc/${pid}/cmdline`)).replaceAll("\0", " ");
    if (cmdline.includes(text) || await also(pid)) pids.push(pid);
  }
  return pids;
}

/** Pids of processes that belong to the node (never this process). */
export function nodeProcesses(target: SweepTarget): Promise<number[]> {
  return pidsNaming(
    `${target.dir}/`,
    async (pid) => inCgroup(await readOrEmpty(`/proc/${pid}/cgroup`), target.cgroupRoot),
  );
}

/** The cgroup v1 (and hybrid v2) hierarchies mounted under /sys/fs/cgroup. */
export async function cgroupHierarchies(): Promise<string[]> {
  const mounts = await Deno.readTextFile("/proc/self/mountinfo");
  return mounts.split("\n").filter((l) => / - cgroup2? /.test(l)).map((l) => l.split(" ")[4]);
}

/** Removes `path` and the cgroups below it, deepest first (a cgroup goes with rmdir only). */
async function removeCgroupTree(path: string): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(path)];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  for (const e of entries) if (e.isDirectory) await removeCgroupTree(`${path}/${e.name}`);
  await Deno.remove(path).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

async function run(cmd: string, args: string[]): Promise<Deno.CommandOutput> {
  return await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" })
    .output();
}

/** Links the kubelet made in /var/log/containers (a fixed path) that point into `dir`. */
async function removeContainerLogLinks(dir: string): Promise<void> {
  try {
    for await (const e of Deno.readDir("/var/log/containers")) {
      const path = `/var/log/containers/${e.name}`;
      const target = await Deno.readLink(path).catch(() => "");
      if (target.startsWith(`${dir}/`)) await Deno.remove(path).catch(() => {});
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/**
 * Kills the node's remaining processes, unmounts everything below its folder, removes its cgroups
 * and log links. Returns what it could not undo (empty when clean).
 */
export async function sweepNode(target: SweepTarget, timeoutMs = 20_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let pids = await nodeProcesses(target);
  while (pids.length && Date.now() < deadline) {
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    }
    await new Promise((r) => setTimeout(r, 100)); // the kernel reaps asynchronously
    pids = await nodeProcesses(target);
  }
  const problems = pids.map((pid) => `process ${pid} survived SIGKILL`);
  for (const point of mountsBelow(await Deno.readTextFile("/proc/self/mountinfo"), target.dir)) {
    const out = await run("umount", [point]);
    if (!out.success && !(await run("umount", ["-l", point])).success) {
      problems.push(`umount ${point}: ${new TextDecoder().decode(out.stderr).trim()}`);
    }
  }
  for (const hierarchy of await cgroupHierarchies()) {
    // A cgroup is busy for a moment after its last process died.
    for (;;) {
      try {
        await removeCgroupTree(`${hierarchy}${target.cgroupRoot}`);
        break;
      } catch (e) {
        if (Date.now() > deadline) {
          problems.push(`cgroup ${hierarchy}${target.cgroupRoot}: ${e}`);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  await removeContainerLogLinks(target.dir);
  return problems;
}
