/**
 * The apply gate: how the harness judges every `bootc … --apply` at the moment it is invoked.
 *
 * Whether a node may reboot is a fact of the moment the daemon decides to apply, not of the
 * moment the machine actually goes down: the controller may legitimately change the BootcNode
 * and the Node right after the daemon invoked bootc (a new target resets the node to Staged), and
 * a checker that reads the API only when it performs the reboot then blames the daemon for what
 * the controller did later. So the simulated bootc records each `--apply` invocation the moment
 * it starts, before it changes anything:
 *
 * - `<root>/.bootc-sim/applies/<id>.json`: {@linkcode ApplyInvocation} — the command line and the
 *   time the process was started (read from `/proc/self/stat`, so the time the caller spawned it,
 *   not the time Deno finished loading);
 * - when the host's `applyGate` setting is on, the command then **waits** until the harness has
 *   written `<id>.verdict.json` ({@linkcode ApplyVerdict}) and only then unlocks the staged
 *   deployment and asks for the reboot (whose request names the invocation id). The harness can
 *   therefore never perform a reboot it has not judged, and judges it on state read right away.
 *
 * The verdict does not change what bootc does (real bootc would reboot regardless); it is the
 * checker's record. Both files are replaced atomically, so readers need no lock.
 *
 * @module
 */

import type { BootcCommand } from "./cli.ts";
import { type SimPaths, writeAtomic } from "./store.ts";

/** One `--apply` invocation as the simulated bootc recorded it. */
export interface ApplyInvocation {
  /** Unique id (also in the reboot request it led to). */
  id: string;
  /** bootc's arguments (after the program name). */
  command: string[];
  /** When the bootc process was started (ISO 8601): the moment the caller invoked it. */
  invokedAt: string;
  /** The bootc process. */
  pid: number;
}

/** The harness's judgement of an invocation. */
export interface ApplyVerdict {
  /** Whether the invocation was authorized when it was made. */
  allowed: boolean;
  /** A short reason (a RebootAllowed reason, or the checker's). */
  reason: string;
  /** Human-readable detail. */
  message: string;
  /** When the verdict was given (ISO 8601). */
  judgedAt: string;
}

/** An invocation and, once given, the harness's verdict. */
export interface ApplyRecord extends ApplyInvocation {
  verdict?: ApplyVerdict;
}

/** True for the commands that ask for a reboot: `switch|upgrade|rollback … --apply`. */
export function isApply(cmd: BootcCommand): boolean {
  return (cmd.kind === "switch" || cmd.kind === "upgrade" || cmd.kind === "rollback") &&
    cmd.apply;
}

/**
 * When a process started, from its `/proc/<pid>/stat` (field 22, clock ticks since boot) and
 * `/proc/uptime` read at `nowMs`. `hz` is USER_HZ, 100 on every Linux build that matters.
 * Returns undefined when the texts cannot be parsed.
 */
export function processStartMs(
  statText: string,
  uptimeText: string,
  nowMs: number,
  hz = 100,
): number | undefined {
  // The command name (field 2) may contain spaces and parentheses: fields restart after the last ")".
  const fields = statText.slice(statText.lastIndexOf(")") + 2).trim().split(/\s+/);
  // After the name, field 3 (state) is fields[0], so field 22 (starttime) is fields[19].
  const ticksText = fields[19] ?? "";
  const uptimeField = uptimeText.trim().split(/\s+/)[0];
  if (!/^\d+$/.test(ticksText) || !/^\d+(\.\d+)?$/.test(uptimeField)) return undefined;
  const startTicks = Number(ticksText);
  const uptimeSec = Number(uptimeField);
  const ageMs = Math.max(0, uptimeSec * 1000 - (startTicks * 1000) / hz);
  return nowMs - ageMs;
}

/** When this process started (falls back to now where /proc cannot be read). */
async function ownStartMs(): Promise<number> {
  try {
    const stat = await Deno.readTextFile("/proc/self/stat");
    const uptime = await Deno.readTextFile("/proc/uptime");
    return processStartMs(stat, uptime, Date.now()) ?? Date.now();
  } catch {
    return Date.now();
  }
}

function invocationPath(paths: SimPaths, id: string): string {
  return `${paths.appliesDir}/${id}.json`;
}

function verdictPath(paths: SimPaths, id: string): string {
  return `${paths.appliesDir}/${id}.verdict.json`;
}

/** Records an `--apply` invocation of this process (called by the simulated bootc). */
export async function recordApplyInvocation(
  paths: SimPaths,
  argv: string[],
): Promise<ApplyInvocation> {
  const startedMs = await ownStartMs();
  const invocation: ApplyInvocation = {
    // Sortable by time, unique across processes.
    id: `${String(Math.round(startedMs)).padStart(15, "0")}-${crypto.randomUUID().slice(0, 8)}`,
    command: [...argv],
    invokedAt: new Date(startedMs).toISOString(),
    pid: Deno.pid,
  };
  await Deno.mkdir(paths.appliesDir, { recursive: true });
  await writeAtomic(invocationPath(paths, invocation.id), JSON.stringify(invocation) + "\n");
  return invocation;
}

async function readVerdict(paths: SimPaths, id: string): Promise<ApplyVerdict | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(verdictPath(paths, id))) as ApplyVerdict;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/**
 * Waits until the harness has written its verdict on invocation `id`; undefined after
 * `timeoutMs` (the caller then fails the command, so a harness that stopped answering shows).
 */
export async function awaitApplyVerdict(
  paths: SimPaths,
  id: string,
  opts: { timeoutMs: number; intervalMs?: number },
): Promise<ApplyVerdict | undefined> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const verdict = await readVerdict(paths, id);
    if (verdict) return verdict;
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 20));
  }
}

/** Writes the harness's verdict on invocation `id` (releasing a gated `--apply`). */
export async function writeApplyVerdict(
  paths: SimPaths,
  id: string,
  verdict: ApplyVerdict,
): Promise<void> {
  await writeAtomic(verdictPath(paths, id), JSON.stringify(verdict) + "\n");
}

/**
 * Every recorded invocation, oldest first, with its verdict when there is one; with
 * `pendingOnly`, only those without one, read without opening the others' files (the
 * harness polls for them every few milliseconds for the whole run).
 */
export async function readApplyRecords(
  paths: SimPaths,
  options: { pendingOnly?: boolean } = {},
): Promise<ApplyRecord[]> {
  const ids: string[] = [];
  const judged = new Set<string>();
  try {
    for await (const entry of Deno.readDir(paths.appliesDir)) {
      if (!entry.isFile) continue;
      const verdict = /^(.+)\.verdict\.json$/.exec(entry.name);
      const invocation = /^(.+)\.json$/.exec(entry.name);
      if (verdict) judged.add(verdict[1]);
      else if (invocation) ids.push(invocation[1]);
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  ids.sort();
  const records: ApplyRecord[] = [];
  for (const id of ids) {
    if (options.pendingOnly && judged.has(id)) continue;
    let invocation: ApplyInvocation;
    try {
      invocation = JSON.parse(await Deno.readTextFile(invocationPath(paths, id)));
    } catch {
      continue; // removed meanwhile (the host is being destroyed)
    }
    const verdict = judged.has(id) ? await readVerdict(paths, id) : undefined;
    records.push(verdict ? { ...invocation, verdict } : invocation);
  }
  return records;
}
