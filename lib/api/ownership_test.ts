import assert from "node:assert/strict";
import { ownedByPool } from "./annotations.ts";
import { owningPool } from "./ownership.ts";

function bn(refs?: { kind: string; name: string; controller?: boolean }[]) {
  return { metadata: { ownerReferences: refs } };
}

Deno.test("owningPool: only a controller ownerReference of kind BootcNodePool", () => {
  assert.equal(owningPool(bn([{ kind: "BootcNodePool", name: "a", controller: true }])), "a");
  assert.equal(owningPool(bn()), undefined);
  assert.equal(owningPool(undefined), undefined);
  assert.equal(owningPool({}), undefined);
  assert.equal(
    owningPool(bn([{ kind: "BootcNodePool", name: "a", controller: false }])),
    undefined,
  );
  assert.equal(owningPool(bn([{ kind: "BootcNodePool", name: "a" }])), undefined);
  assert.equal(owningPool(bn([{ kind: "DaemonSet", name: "a", controller: true }])), undefined);
  assert.equal(
    owningPool(bn([
      { kind: "BootcNodePool", name: "x" },
      { kind: "BootcNodePool", name: "b", controller: true },
    ])),
    "b",
  );
});

Deno.test("ownedByPool agrees with owningPool", () => {
  assert.equal(ownedByPool(bn([{ kind: "BootcNodePool", name: "a", controller: true }])), true);
  assert.equal(ownedByPool(bn([{ kind: "BootcNodePool", name: "a" }])), false);
});
