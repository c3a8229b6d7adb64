/**
 * The test world of the health-gated rollout tests (`health_policy_test.ts`,
 * `health_regressions_test.ts`): each plan's writes are applied to plain Node
 * and BootcNode objects, the plan's status becomes the pool's, and a minimal
 * daemon (one step per tick, bootc's apply/rollback/fall-back semantics,
 * reboots only with the slot+drain authorization) plays the hosts. Also the
 * fixtures and plan helpers both files share.
 *
 * @module
 */
import { formatTime } from "../../lib/clock.ts";
import assert from "node:assert/strict";
import {
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  type BootcNode,
  type BootcNodePool,
  type BootcNodePoolStatus,
  findCondition,
  type Revision,
  setCondition,
} from "../../lib/api/mod.ts";
import { recordVerdict } from "./fake_daemon.ts";
import { digestOfPullspec } from "../model/image_ref.ts";
import { type Plan, type PlanInput, planPool } from "../planner/planner.ts";
import type { NodeSummary } from "../model/types.ts";
import { bootcNode, digest, image, node, pool } from "./fixtures.ts";

/** The image every world starts on (revision 1). */
export const A = image("a");
/** The image most tests roll out. */
export const B = image("b");
/** The fixed "now" of single-plan tests and the world's starting clock. */
export const NOW = "2026-01-01T01:00:00Z";
/** When `rebootedInto` nodes were drained and asked to reboot. */
export const DRAINED = "2026-01-01T00:58:00Z";
/** When `rebootedInto` nodes came back (Ready since). */
export const BACK = "2026-01-01T00:59:00Z";

/** `spec.rollout` of a pool. */
export type Rollout = NonNullable<BootcNodePool["spec"]["rollout"]>;

// ---------------------------------------------------------------------------
// Helpers on plans

/** The nodes of the plan's actions whose `why` is `why`. */
export function withWhy(plan: Plan, why: string): string[] {
  return plan.actions.flatMap((a) => "why" in a && a.why === why ? [a.node] : []);
}
/** The plan's events with this reason. */
export function events(plan: Plan, reason: string) {
  return plan.events.filter((e) => e.reason === reason);
}
/** A pool condition by type. */
export function cond(status: BootcNodePoolStatus | undefined, type: string) {
  return findCondition(status?.conditions, type);
}
/** The history as "revision:image:outcome", e.g. "2:b:Succeeded". */
export function outcomes(status: BootcNodePoolStatus | undefined): string[] {
  return (status?.history ?? []).map((r) => `${r.revision}:${tail(r.image)}:${r.outcome}`);
}
/** "a" for image("a"). */
export function tail(img: string): string {
  return (digestOfPullspec(img) ?? img).slice(7, 8);
}
/** A revision of `img` with `outcome` (ended unless Progressing). */
export function rev(n: number, img: string, outcome: Revision["outcome"]): Revision {
  return {
    revision: n,
    image: img,
    digest: digestOfPullspec(img)!,
    startedAt: "2025-12-01T00:00:00Z",
    ...(outcome === "Progressing" ? {} : { endedAt: "2025-12-02T00:00:00Z" }),
    outcome,
  };
}

/** A pool rolling out `ref` after image("a") succeeded, with `rollout` merged in. */
export function healthPool(
  rollout: Partial<Rollout> = {},
  opts: { ref?: string; status?: BootcNodePoolStatus; history?: Revision[] } = {},
): BootcNodePool {
  const p = pool({
    ref: opts.ref ?? B,
    status: {
      observedGeneration: 1,
      targetImage: B,
      targetDigest: digest("b"),
      history: opts.history ?? [rev(1, A, "Succeeded"), rev(2, B, "Progressing")],
      ...opts.status,
    },
  });
  p.spec.rollout = { ...p.spec.rollout, ...rollout };
  return p;
}

/** n1 rebooted into image("b") (drained for it at DRAINED, back at BACK), host as given. */
export function rebootedInto(
  host: "Healthy" | "Unhealthy" | "Starting",
  extra: Parameters<typeof bootcNode>[1] = {},
) {
  return bootcNode("n1", {
    booted: B,
    rollback: A,
    host,
    state: "Booted",
    slotAt: DRAINED,
    drainedAt: DRAINED,
    ...extra,
  });
}

// ---------------------------------------------------------------------------
// A small world for multi-step scenarios

/** How a bad image misbehaves on the hosts that boot it. */
export type Bad = "unit" | "fallback";

/** A reboot a simulated daemon performed. */
export interface Reboot {
  node: string;
  image: string;
  at: string;
}

/** A pool, its Nodes, BootcNodes and daemons, stepped plan by plan on a fake clock. */
export class World {
  nodes = new Map<string, NodeSummary>();
  bns = new Map<string, BootcNode>();
  bad = new Map<string, Bad>();
  reboots: Reboot[] = [];
  plans: Plan[] = [];
  resolution?: PlanInput["resolution"];
  now: Date;

  constructor(public pool: BootcNodePool, names: string[], bootedImage: string, now = NOW) {
    this.now = new Date(now);
    for (const n of names) {
      this.nodes.set(n, node(n, { readySince: "2025-12-01T00:00:00Z" }));
      const bn = bootcNode(n, { booted: bootedImage, desired: bootedImage });
      this.bns.set(n, bn);
    }
  }

  /** Changes the pool's spec (a new generation, as the API server would). */
  edit(f: (p: BootcNodePool) => void): void {
    f(this.pool);
    this.pool.metadata.generation = (this.pool.metadata.generation ?? 1) + 1;
  }

  /** A tag that the registry now resolves to `img`. */
  resolveTo(img: string): void {
    this.resolution = {
      generation: this.pool.metadata.generation,
      at: this.now,
      result: { ok: true, digest: digestOfPullspec(img)! },
    };
  }

  plan(): Plan {
    const p = structuredClone(this.pool);
    const plan = planPool({
      pool: p,
      pools: [{ name: p.metadata.name ?? "", uid: p.metadata.uid, selector: p.spec.nodeSelector }],
      nodes: new Map([...this.nodes].map(([k, v]) => [k, structuredClone(v)])),
      bootcNodes: new Map([...this.bns].map(([k, v]) => [k, structuredClone(v)])),
      podsByNode: new Map(),
      pdbs: [],
      resolution: this.resolution,
      now: this.now,
    });
    this.plans.push(plan);
    return plan;
  }

  /** Applies a plan's writes and status, as the shell would. */
  apply(plan: Plan): void {
    for (const a of plan.actions) {
      switch (a.kind) {
        case "patchNode": {
          const n = this.nodes.get(a.node)!;
          const obj = mergePatch(
            {
              metadata: { annotations: n.annotations ?? {}, labels: n.labels },
              spec: { unschedulable: n.unschedulable },
            },
            a.patch,
          ) as {
            metadata: { annotations?: Record<string, string>; labels?: Record<string, string> };
            spec: { unschedulable?: boolean };
          };
          n.annotations = obj.metadata.annotations ?? {};
          n.labels = obj.metadata.labels ?? {};
          n.unschedulable = obj.spec.unschedulable ?? false;
          break;
        }
        case "patchBootcNode":
        case "patchBootcNodeStatus": {
          const bn = this.bns.get(a.node)!;
          const next = mergePatch(bn, a.patch) as BootcNode;
          // As the API server does: a spec change is a new generation.
          if (JSON.stringify(next.spec) !== JSON.stringify(bn.spec)) {
            next.metadata.generation = (bn.metadata.generation ?? 1) + 1;
          }
          this.bns.set(a.node, next);
          break;
        }
        case "createBootcNode":
          this.bns.set(a.node, structuredClone(a.object));
          break;
        case "deleteBootcNode":
          this.bns.delete(a.node);
          break;
        default:
          break;
      }
    }
    if (plan.status) this.pool.status = structuredClone(plan.status);
  }

  /** One step of every node's daemon. */
  daemon(): void {
    for (const [name, bn] of this.bns) this.bns.set(name, this.daemonStep(name, bn));
  }

  private daemonStep(name: string, bn: BootcNode): BootcNode {
    const next = structuredClone(bn);
    const s = next.status!;
    const want = bn.spec.desiredImage;
    const is = (e: { image?: string } | undefined) =>
      e?.image !== undefined && digestOfPullspec(e.image) === digestOfPullspec(want);
    const entry = (img: string) => ({
      image: img,
      imageDigest: digestOfPullspec(img),
      architecture: "amd64",
    });
    const setIdle = (status: "True" | "False", reason: string) => {
      s.conditions = setCondition(
        s.conditions,
        { type: "Idle", status, reason, message: "" },
        this.now,
      );
    };
    const setDegraded = (message?: string) => {
      s.conditions = setCondition(s.conditions, {
        type: "Degraded",
        status: message ? "True" : "False",
        reason: message ? "Error" : "Healthy",
        message: message ?? "",
      }, this.now);
    };
    const n = this.nodes.get(name)!;
    const authorized = bn.spec.desiredImageState === "Booted" && n.unschedulable &&
      n.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined &&
      n.annotations?.[ANNOTATION_DRAINED_FOR] === want;
    const idle = findCondition(s.conditions, "Idle");
    const boot = (img: string, from: string) => {
      this.reboots.push({ node: name, image: img, at: this.now.toISOString() });
      n.ready = true;
      n.readySince = formatTime(this.now);
      s.booted = entry(img);
      s.rollback = entry(from);
      s.staged = undefined;
      setIdle("True", "Idle");
      setDegraded();
    };
    s.observedGeneration = bn.metadata.generation;
    if (is(s.booted)) {
      s.staged = undefined;
      setIdle("True", "Idle");
      setDegraded();
      // The controller's verdict rides in its release; the daemon records it.
      Object.assign(s, recordVerdict(s, bn));
    } else if (idle?.reason === "Rebooting" && !s.staged && is(s.rollback)) {
      return next; // fell back: Degraded, nothing done until the spec changes
    } else if (is(s.rollback)) {
      // The rollback route: nothing to stage; `bootc rollback --apply` when authorized.
      if (authorized) boot(want, s.booted!.image!);
      else setIdle("False", "Staged");
    } else if (is(s.staged)) {
      if (!authorized) {
        setIdle("False", "Staged");
      } else if (this.bad.get(want) === "fallback") {
        this.reboots.push({ node: name, image: want, at: this.now.toISOString() });
        s.rollback = entry(want);
        s.staged = undefined;
        setIdle("False", "Rebooting");
        setDegraded(`node fell back: it booted ${want} but the host fell back`);
      } else {
        boot(want, s.booted!.image!);
      }
    } else {
      s.staged = entry(want);
      setIdle("False", "Staged");
    }
    const booted = s.booted!;
    const bad = this.bad.get(booted.image ?? "") === "unit";
    s.hostHealth = {
      bootedDigest: booted.imageDigest,
      checkedAt: this.now.toISOString(),
      state: bad ? "Unhealthy" : "Healthy",
      ...(bad ? { failedUnits: ["app.service"] } : {}),
    };
    return next;
  }

  /** plan → apply → daemon, then the clock moves on `ms`. */
  tick(ms = 1_000): Plan {
    const plan = this.plan();
    this.apply(plan);
    this.daemon();
    this.now = new Date(this.now.getTime() + ms);
    return plan;
  }

  /** Ticks until `done` holds for the last plan (at most `max` ticks). */
  until(done: (p: Plan) => boolean, max = 40, ms = 1_000): Plan {
    for (let i = 0; i < max; i++) {
      const plan = this.tick(ms);
      if (done(plan)) return plan;
    }
    throw new Error(`not done after ${max} ticks: ${cond(this.pool.status, "UpToDate")?.message}`);
  }

  desired(): Record<string, string> {
    return Object.fromEntries([...this.bns].map(([k, v]) => [k, tail(v.spec.desiredImage)]));
  }
  booted(): Record<string, string> {
    return Object.fromEntries(
      [...this.bns].map(([k, v]) => [k, tail(v.status!.booted!.image ?? "")]),
    );
  }
  events(reason: string) {
    return this.plans.flatMap((p) => p.events.filter((e) => e.reason === reason));
  }
}

/** RFC 7386 JSON merge patch (undefined values in the patch are skipped). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target !== null && typeof target === "object" &&
      !Array.isArray(target)
    ? { ...(target as Record<string, unknown>) }
    : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === undefined) continue;
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return structuredClone(out);
}

/** Every node runs `img`, no slot is held and the revision succeeded. */
export function allOn(_w: World, img: string): (p: Plan) => boolean {
  // Every node runs it (a pool held on a rollback image is not UpToDate: its spec names another).
  return (p) =>
    p.status?.targetImage === img && p.status.updatedCount === p.status.nodeCount &&
    (p.status.slotsInUse ?? 0) === 0 && p.status.history?.at(-1)?.outcome === "Succeeded";
}

/** A pool that rolled image("a") out everywhere (revision 1 Succeeded). */
export function settledWorld(
  rollout: Partial<Rollout>,
  names = ["n1", "n2", "n3"],
  ref = A,
): World {
  const p = pool({ ref });
  p.spec.rollout = { ...p.spec.rollout, ...rollout };
  const w = new World(p, names, A);
  if (!ref.includes("@")) w.resolveTo(A);
  w.until(allOn(w, A));
  assert.deepEqual(outcomes(w.pool.status), ["1:a:Succeeded"]);
  return w;
}
