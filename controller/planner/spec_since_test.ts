import assert from "node:assert/strict";
import {
  ANNOTATION_SPEC_GENERATION,
  ANNOTATION_SPEC_SINCE,
  ANNOTATION_VERIFIED_AT,
  ANNOTATION_VERIFIED_FOR,
  ANNOTATION_VERIFIED_GENERATION,
  type BootcNode,
} from "../../lib/api/mod.ts";
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
      metadata: {
        annotations: {
          x: null,
          [ANNOTATION_SPEC_GENERATION]: "4",
          [ANNOTATION_SPEC_SINCE]: "2026-01-01T01:00:00Z",
        },
      },
    },
  });
});

Deno.test("stampSpecChanges: a daemon already behind keeps its clock; no-op and other writes are left", () => {
  const behind = stampSpecChanges([revoke("a")], NOW, new Map([["a", at("a", 4, 3)]]));
  assert.deepEqual(behind, [{
    ...revoke("a"),
    patch: {
      spec: { desiredImageState: "Staged" },
      metadata: { annotations: { x: null, [ANNOTATION_SPEC_GENERATION]: "5" } },
    },
  }], "a dead daemon is not hidden by the next change (only the generation is recorded)");
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

Deno.test("stampSpecChanges: the revert of a hand edit starts a clock when the daemon had reported on the controller's spec", () => {
  // The controller's last change produced generation 3, the daemon reported on it; a
  // person's edit made it 4: the plan's revert is the controller's change, timed.
  const edited = at("a", 4, 3);
  edited.metadata.annotations = {
    ...edited.metadata.annotations,
    [ANNOTATION_SPEC_GENERATION]: "3",
  };
  const [revert] = stampSpecChanges([revoke("a")], NOW, new Map([["a", edited]]));
  const annotations =
    (revert as unknown as { patch: { metadata: { annotations: Record<string, unknown> } } })
      .patch.metadata.annotations;
  assert.equal(annotations[ANNOTATION_SPEC_SINCE], "2026-01-01T01:00:00Z");
  assert.equal(annotations[ANNOTATION_SPEC_GENERATION], "5");
  // A daemon behind the controller's own spec (2 < 3) keeps its clock, edit or not.
  const dead = at("a", 4, 2);
  dead.metadata.annotations = { ...dead.metadata.annotations, [ANNOTATION_SPEC_GENERATION]: "3" };
  const [kept] = stampSpecChanges([revoke("a")], NOW, new Map([["a", dead]]));
  assert.equal(
    (kept as unknown as { patch: { metadata: { annotations: Record<string, unknown> } } }).patch
      .metadata
      .annotations[ANNOTATION_SPEC_SINCE],
    undefined,
  );
});

Deno.test("stampSpecChanges: two spec changes of one node in a plan record the generations they produce", () => {
  const policy: Action = {
    kind: "patchBootcNode",
    node: "a",
    patch: { spec: { rebootPolicy: "AllowSoftReboot" } },
    why: "sync spec",
  };
  const out = stampSpecChanges([policy, revoke("a")], NOW, new Map([["a", at("a", 7, 7)]]));
  const generations = out.map((a) =>
    (a as unknown as { patch: { metadata: { annotations: Record<string, unknown> } } }).patch
      .metadata.annotations[ANNOTATION_SPEC_GENERATION]
  );
  assert.deepEqual(generations, ["8", "9"]);
});

Deno.test("stampSpecChanges: a spec change other than a release takes the last release's verdict away", () => {
  const bn = at("a", 4, 4);
  bn.metadata.annotations = {
    ...bn.metadata.annotations,
    [ANNOTATION_VERIFIED_FOR]: "registry.example/os@sha256:" + "b".repeat(64),
    [ANNOTATION_VERIFIED_AT]: "2026-01-01T00:30:00Z",
    [ANNOTATION_VERIFIED_GENERATION]: "4",
  };
  const retarget: Action = {
    kind: "patchBootcNode",
    node: "a",
    patch: { spec: { desiredImage: "registry.example/os@sha256:" + "c".repeat(64) } },
    why: "sync spec",
  };
  const annotations = (a: Action) =>
    (a as unknown as { patch: { metadata: { annotations: Record<string, unknown> } } }).patch
      .metadata
      .annotations;
  const [out] = stampSpecChanges([retarget], NOW, new Map([["a", bn]]));
  assert.equal(annotations(out)[ANNOTATION_VERIFIED_FOR], null);
  assert.equal(annotations(out)[ANNOTATION_VERIFIED_AT], null);
  assert.equal(annotations(out)[ANNOTATION_VERIFIED_GENERATION], null);
  assert.equal(annotations(out)[ANNOTATION_SPEC_GENERATION], "5");
  // A release carrying a new verdict keeps it (stamped with the generation it produces).
  const booted = at("a", 4, 4);
  const release: Action = {
    kind: "patchBootcNode",
    node: "a",
    patch: {
      spec: { desiredImageState: "Staged" },
      metadata: {
        annotations: { [ANNOTATION_VERIFIED_FOR]: "img", [ANNOTATION_VERIFIED_AT]: "t" },
      },
    },
    why: "release slot",
  };
  const [kept] = stampSpecChanges([release], NOW, new Map([["a", booted]]));
  assert.equal(annotations(kept)[ANNOTATION_VERIFIED_FOR], "img");
  assert.equal(annotations(kept)[ANNOTATION_SPEC_GENERATION], "5");
  assert.equal(
    annotations(kept)[ANNOTATION_VERIFIED_GENERATION],
    "5",
    "the verdict's own generation",
  );
  // No verdict on the object: nothing to take away.
  const [plain] = stampSpecChanges([retarget], NOW, new Map([["a", at("a", 4, 4)]]));
  assert.equal(ANNOTATION_VERIFIED_FOR in annotations(plain), false);
});
