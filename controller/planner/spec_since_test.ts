import assert from "node:assert/strict";
import { ANNOTATION_SPEC_SINCE, type BootcNode } from "../../lib/api/mod.ts";
import type { Action } from "./plan.ts";
import { stampSpecChanges } from "./spec_since.ts";
import { bootcNode } from "../testing/fixtures.ts";

const NOW = new Date("2026-01-01T01:00:00Z");

/** `name`'s BootcNode at `generation`, its daemon having reported on `observed`. */
function at(name: string, generation: number, observed: number): BootcNode {
  const bn = bootcNode(name, { phase: "idle", state: "Booted" });
  bn.metadata.generation = generation;
  bn.status!.observedGeneration = observed;
  return bn;
}

const revoke = (node: string): Action => ({
  kind: "patchBootcNode",
  node,
  patch: { spec: { desiredImageState: "Staged" }, metadata: { annotations: { x: null } } },
  why: "release",
});

Deno.test("stampSpecChanges: a spec change to a caught-up daemon's node carries its time", () => {
  const out = stampSpecChanges([revoke("a")], NOW, new Map([["a", at("a", 3, 3)]]));
  assert.deepEqual(out[0], {
    ...revoke("a"),
    patch: {
      spec: { desiredImageState: "Staged" },
      metadata: { annotations: { x: null, [ANNOTATION_SPEC_SINCE]: "2026-01-01T01:00:00Z" } },
    },
  });
});

Deno.test("stampSpecChanges: a daemon already behind keeps its clock; no-op and other writes are left", () => {
  const behind = stampSpecChanges([revoke("a")], NOW, new Map([["a", at("a", 4, 3)]]));
  assert.deepEqual(behind, [revoke("a")], "a dead daemon is not hidden by the next change");
  const unchanged: Action = {
    kind: "patchBootcNode",
    node: "a",
    patch: { spec: { desiredImageState: "Booted" } },
    why: "request reboot",
  };
  const others: Action[] = [
    unchanged,
    {
      kind: "patchBootcNode",
      node: "a",
      patch: { metadata: { annotations: { y: "1" } } },
      why: "",
    },
    { kind: "patchNode", node: "a", patch: { spec: { unschedulable: null } }, why: "uncordon" },
    revoke("unknown"),
  ];
  assert.deepEqual(stampSpecChanges(others, NOW, new Map([["a", at("a", 3, 3)]])), others);
});
