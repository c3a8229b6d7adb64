/**
 * What the demo prints about the pool, as pure functions of what it read:
 * the per-node table, the progress line, the channel line and the closing
 * hints. `main.ts` reads the cluster and draws these on the live screen.
 *
 * @module
 */
import type { INode } from "kubernetes-models/v1/Node";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  holdsRebootSlot,
} from "../../lib/api/mod.ts";

/** What one refresh read: the demo pool, the BootcNodes and the Nodes. */
export interface Snapshot {
  pool?: BootcNodePool;
  bootcNodes: BootcNode[];
  nodes: INode[];
}

/** The names the demo gives its images, by digest (v1, v2, BAD; or the channel's versions). */
export type ImageNames = ReadonlyMap<string, string>;

/** An image's name in the demo, else 12 hex digits of its digest ("-": none). */
export function imageName(names: ImageNames, digest: string | undefined): string {
  if (!digest) return "-";
  return names.get(digest) ?? digest.replace("sha256:", "").slice(0, 12);
}

/** The table's header. */
export const TABLE_HEADER =
  "NODE          BOOTED  STAGED  STATE       SLOT  CORDONED  READY  DEGRADED";

/** The per-node table (header first), the channel line for a channel pool, the progress line. */
export function renderTable(
  snap: Snapshot,
  names: ImageNames,
  options: { pool: string; elapsedSeconds: number },
): string[] {
  const lines = [TABLE_HEADER];
  const byName = new Map(snap.nodes.map((n) => [n.metadata?.name, n]));
  const sorted = [...snap.bootcNodes].sort((a, b) =>
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "")
  );
  for (const bn of sorted) {
    const node = byName.get(bn.metadata.name);
    const idle = findCondition(bn.status?.conditions, "Idle");
    const deg = findCondition(bn.status?.conditions, "Degraded");
    const ready = node?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
    lines.push(
      [
        (bn.metadata.name ?? "").padEnd(13),
        imageName(names, bn.status?.booted?.imageDigest).padEnd(7),
        imageName(names, bn.status?.staged?.imageDigest).padEnd(7),
        (idle?.reason ?? "Pending").padEnd(11),
        (holdsRebootSlot(node ?? {}) ? "yes" : "").padEnd(5),
        (node?.spec?.unschedulable ? "yes" : "").padEnd(9),
        (ready ? "yes" : "no").padEnd(6),
        deg?.status === "True" ? `yes: ${deg.message}` : "",
      ].join(" ").trimEnd(),
    );
  }
  const channel = channelLine(snap.pool);
  if (channel) lines.push(channel);
  lines.push(progressLine(snap.pool, names, options));
  return lines;
}

/**
 * `[12.3s] pool workers: target v2 · RolloutInProgress: 3/6 updated; … · slots 1 · healthy`.
 * The pool's headline is its `status.state` when it has one, else the UpToDate reason; the
 * channel's notes are left to {@linkcode channelLine} (said once, not on every line).
 */
export function progressLine(
  pool: BootcNodePool | undefined,
  names: ImageNames,
  options: { pool: string; elapsedSeconds: number },
): string {
  const upToDate = findCondition(pool?.status?.conditions, "UpToDate");
  const degraded = findCondition(pool?.status?.conditions, "Degraded");
  const state = pool?.status?.state ?? upToDate?.reason ?? "?";
  const message = (upToDate?.message ?? "").split("; ")
    .filter((part) => !part.startsWith("channel: ")).join("; ");
  return `[${options.elapsedSeconds.toFixed(1)}s] pool ${options.pool}: target ${
    imageName(names, pool?.status?.targetDigest)
  } · ${state}: ${message} · slots ${pool?.status?.slotsInUse ?? 0} · ${
    degraded?.status === "True" ? `Degraded/${degraded.reason}` : "healthy"
  }`;
}

/**
 * For a channel pool: the channel, the version it runs and, when a newer one is
 * not taken, why (`channel ~1.0 of repo: runs 1.0.1; 2.0.0 outside ~1.0`).
 */
export function channelLine(pool: BootcNodePool | undefined): string | undefined {
  const ch = pool?.status?.channel;
  const spec = pool?.spec.image.channel;
  if (!ch && !spec) return undefined;
  const constraint = ch?.constraint ?? spec?.constraint ?? "";
  const runs = ch?.currentVersion ? `runs ${ch.currentVersion}` : "no version chosen yet";
  return `channel ${constraint} of ${ch?.repository ?? spec?.repository}: ${runs}` +
    (ch?.message ? `; ${ch.message}` : "");
}

/** The lines that end the `--bad-image` act: how the RolledBack state clears. */
export function clearRolledBackHint(
  options: { pool: string; channel: boolean; failed: string; tag?: string },
): string[] {
  if (options.channel) {
    return [
      "  To clear RolledBack, publish a fixed version (say 1.0.3): the channel's next check",
      `  rolls it out; ${options.failed} failed and is never chosen again.`,
    ];
  }
  return [
    "  To clear RolledBack, make spec.image.ref mean another image: push a fixed image to",
    `  :${options.tag ?? "stable"} (a new digest) or change spec.image.ref; the pool rolls it ` +
    "out and the hold ends.",
    `  To roll ${options.failed} out again as it is: kubectl bootc retry ${options.pool} ` +
    "(it sets bootc.dev/retry-revision).",
  ];
}
