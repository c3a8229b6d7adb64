/**
 * The planner as a pipeline of pure steps: outputs fold in order, and no step
 * changes its input, the members or another step's result. Inputs and members
 * are frozen (Maps included), so a step that wrote into them would throw.
 */
import assert from "node:assert/strict";
import { planGatedSlots } from "./gated_slots.ts";
import { progressInFlight } from "./in_flight.ts";
import { classifyMember, type Member } from "./membership.ts";
import { isSlotGrant, mergeOutputs, nodeEvent, type PlanInput, stepOutput } from "./plan.ts";
import { planPool } from "./planner.ts";
import { bootcNode, digest, image, input, node, pdb, pod, pool } from "../testing/fixtures.ts";

/** A Map that refuses writes. */
class FrozenMap<K, V> extends Map<K, V> {
  #frozen = false;
  constructor(entries: Iterable<readonly [K, V]>) {
    super();
    for (const [k, v] of entries) super.set(k, v);
    this.#frozen = true;
  }
  override set(key: K, value: V): this {
    if (!this.#frozen) return super.set(key, value);
    throw new TypeError(`write to a frozen Map (${String(key)})`);
  }
  override delete(): boolean {
    throw new TypeError("delete from a frozen Map");
  }
  override clear(): void {
    throw new TypeError("clear of a frozen Map");
  }
}

/** `value` deeply frozen: objects, arrays, Maps (as {@linkcode FrozenMap}) and Sets. */
function deepFreeze<T>(value: T): T {
  if (value instanceof Date || value === null || typeof value !== "object") return value;
  if (value instanceof Map) {
    return new FrozenMap([...value].map(([k, v]) => [k, deepFreeze(v)])) as T;
  }
  if (value instanceof Set) return Object.freeze(new Set(value)) as T;
  if (Object.isFrozen(value)) return value; // shared, and frozen already
  const record = value as Record<string, unknown>;
  for (const k of Object.keys(record)) {
    const frozen = deepFreeze(record[k]);
    if (frozen !== record[k]) record[k] = frozen;
  }
  return Object.freeze(value);
}

/**
 * A pool mid-rollout: two nodes in slots (one draining, one drained and asked to
 * reboot), staged candidates, one degraded member.
 */
function scene(): PlanInput {
  const names = ["n1", "n2", "n3", "n4", "n5", "n6"];
  const nodes = names.map((n) => node(n, { unschedulable: n === "n1" || n === "n2" }));
  const bootcNodes = [
    bootcNode("n1", { phase: "staged", slotAt: "2026-01-01T00:59:00Z" }),
    bootcNode("n2", {
      phase: "rebooting",
      state: "Booted",
      slotAt: "2026-01-01T00:50:00Z",
      drainedAt: "2026-01-01T00:55:00Z",
    }),
    bootcNode("n3", { phase: "staged" }),
    bootcNode("n4", { phase: "staged" }),
    bootcNode("n5", { phase: "staged" }),
    bootcNode("n6", { phase: "degraded" }),
  ];
  // n1's pod is under a PDB; the candidates' pods are not (no PDB deadlock holds them).
  const pods = names.map((n) =>
    pod(`p-${n}`, n, { labels: { app: n === "n1" ? "web" : "batch" } })
  );
  return input(pool({ maxUnavailable: 3 }), {
    nodes,
    bootcNodes,
    pods,
    pdbs: [pdb("web", "web", 1)],
  });
}

function membersOf(i: PlanInput): Member[] {
  return [...i.bootcNodes.values()].map((bn) => {
    const n = i.nodes.get(bn.metadata.name ?? "")!;
    return { node: n, bn, ...classifyMember(n, bn), desired: { image: image("b") } };
  });
}

Deno.test("mergeOutputs: lists in step order, the earliest wake-up, draining if any step drains", () => {
  const a = stepOutput({
    actions: [{ kind: "addFinalizer" }],
    notes: ["a"],
    events: [nodeEvent("n1", "Normal", "A", "a")],
    wake: 5_000,
  });
  const b = stepOutput({ notes: ["b"], needPods: ["n2"], draining: true, wake: 0 });
  const merged = mergeOutputs([a, stepOutput(), b]);
  assert.deepEqual(merged.notes, ["a", "b"]);
  assert.deepEqual(merged.actions, [{ kind: "addFinalizer" }]);
  assert.deepEqual(merged.needPods, ["n2"]);
  assert.equal(merged.requeueAfterMs, 1, "a wake-up is at least 1 ms");
  assert.equal(merged.draining, true);
  assert.equal(mergeOutputs([a]).draining, false);
  assert.equal(mergeOutputs([]).requeueAfterMs, undefined);
});

Deno.test("planPool: a frozen input plans, twice the same (no step writes into its input)", () => {
  const frozen = deepFreeze(scene());
  const plan = planPool(frozen);
  assert.deepEqual(planPool(frozen), plan);
  assert.ok(plan.actions.some(isSlotGrant), "a slot is granted");
  assert.ok(plan.actions.some((a) => a.kind === "evict" && a.node === "n1"), "n1 drains");
  assert.equal(plan.status?.slotsInUse, 3);
  assert.equal(plan.counts.Rebooting, 3, "in a slot, granted or in flight");
});

Deno.test("steps: in flight and the slot step read frozen members and return what they decide", () => {
  const i = deepFreeze(scene());
  const members = deepFreeze(membersOf(i));
  const inFlight = progressInFlight(members, i);
  assert.equal(inFlight.inUse, 2);
  assert.equal(inFlight.drainingNodes, 1);
  assert.deepEqual(inFlight.degradedMessages, ["node n6: error: boom"]);
  assert.deepEqual([...inFlight.drainingDemand], [["default/web", 1]]);
  // The slot step grants without marking the member: the grant is in its result.
  const gated = planGatedSlots({
    input: i,
    members,
    inFlight,
    releasing: [],
    target: { image: image("b"), digest: digest("b") },
    updated: 0,
    canary: undefined,
  });
  const grants = gated.out.actions.filter(isSlotGrant).map((a) => "node" in a ? a.node : "");
  assert.deepEqual(gated.granted, grants);
  assert.equal(grants.length, 1, "one slot free (maxUnavailable 3, two in flight)");
  assert.equal(gated.inUse, 2 + grants.length);
  assert.ok(members.every((m) => m.disrupted === m.cls.disrupted), "members unchanged");
});
