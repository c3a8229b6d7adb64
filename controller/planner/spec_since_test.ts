import assert from "node:assert/strict";
import { ANNOTATION_SPEC_SINCE } from "../../lib/api/mod.ts";
import type { Action } from "./plan.ts";
import { stampSpecChanges } from "./spec_since.ts";

const NOW = new Date("2026-01-01T01:00:00Z");

Deno.test("stampSpecChanges: a BootcNode spec change carries its time; nothing else does", () => {
  const actions: Action[] = [
    {
      kind: "patchBootcNode",
      node: "a",
      patch: { spec: { desiredImageState: "Staged" }, metadata: { annotations: { x: null } } },
      why: "release",
    },
    {
      kind: "patchBootcNode",
      node: "b",
      patch: { metadata: { annotations: { y: "1" } } },
      why: "",
    },
    { kind: "patchNode", node: "a", patch: { spec: { unschedulable: null } }, why: "uncordon" },
  ];
  const out = stampSpecChanges(actions, NOW);
  assert.deepEqual(out[0], {
    ...actions[0],
    patch: {
      spec: { desiredImageState: "Staged" },
      metadata: { annotations: { x: null, [ANNOTATION_SPEC_SINCE]: "2026-01-01T01:00:00Z" } },
    },
  });
  assert.deepEqual(out.slice(1), actions.slice(1));
});
