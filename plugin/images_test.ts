import assert from "node:assert/strict";
import { canaryText, poolImages, renderImages, versionOf } from "./images.ts";
import { bootcNode, cond, NEW, NOW, OLD, pool, REPO, secondsAgo } from "./testing.ts";

const members = [
  bootcNode("n1", { booted: NEW, bootedVersion: "2.0" }),
  bootcNode("n2", { booted: OLD, bootedVersion: "1.0", staged: NEW }),
];

Deno.test("versions come from what bootc reports for that digest on any member", () => {
  assert.equal(versionOf(NEW, members), "2.0");
  assert.equal(versionOf(OLD, members), "1.0");
  assert.equal(versionOf(`sha256:${"c".repeat(64)}`, members), undefined);
  assert.equal(versionOf(undefined, members), undefined);
  // An index target: bootc reports the per-architecture digest.
  const amd64 = `sha256:${"d".repeat(64)}`;
  const arch = [bootcNode("n3", { booted: amd64, bootedVersion: "3.0" })];
  assert.equal(versionOf(NEW, arch, [{ digest: amd64 }]), "3.0");
});

Deno.test("stable vs new: tag, version and short digest; one line when they are the same", () => {
  const rolling = poolImages(pool({ ref: `${REPO}:v2` }), members);
  assert.deepEqual(renderImages(rolling), [
    "  images     stable  (1.0) aaaaaaaaaaaa",
    "             new     v2 (2.0) bbbbbbbbbbbb",
  ]);
  const done = poolImages(pool({ ref: `${REPO}:v2`, deployed: NEW }), members);
  assert.deepEqual(renderImages(done), [
    "  images     stable  v2 (2.0) bbbbbbbbbbbb  (the target)",
  ]);
  // The first rollout of a pool: nothing stable yet.
  const first = pool({ ref: `${REPO}:v2` });
  delete first.status!.deployedDigest;
  assert.deepEqual(renderImages(poolImages(first, members)), [
    "  images     stable  none yet (no rollout finished)",
    "             new     v2 (2.0) bbbbbbbbbbbb",
  ]);
  const unresolved = pool();
  delete unresolved.status!.targetDigest;
  assert.deepEqual(renderImages(poolImages(unresolved, members)), [
    "  images     none resolved yet",
  ]);
});

Deno.test("the target's tag only when sure; the published short form wins", () => {
  // A spec the controller has not acted on yet: its tag may not be the target's.
  const behind = pool({ ref: `${REPO}:v3`, generation: 2, observedGeneration: 1 });
  assert.equal(poolImages(behind, members).next, "(2.0) bbbbbbbbbbbb");
  // The tag cannot be resolved: the old target stays, without the typo'd tag.
  const typo = pool({
    ref: `${REPO}:nosuch`,
    degraded: cond("Degraded", "True", "ImageResolutionFailed", "manifest unknown"),
  });
  assert.equal(poolImages(typo, members).next, "(2.0) bbbbbbbbbbbb");
  const published = pool({ ref: `${REPO}:v2` });
  (published.status as { targetShort?: string }).targetShort = "v2 (2.0.1) bbbbbbbbbbbb";
  assert.equal(poolImages(published, members).next, "v2 (2.0.1) bbbbbbbbbbbb");
  // An automatic rollback: the image it went back from is shown.
  const held = pool({ ref: `${REPO}:v3`, target: OLD, deployed: OLD });
  held.status!.rollbackHold = {
    ref: `${REPO}:v3`,
    failedImage: `${REPO}@${NEW}`,
    image: `${REPO}@${OLD}`,
    at: secondsAgo(60),
  };
  // Back on the image it rolled out before: one line for it, one for the failure.
  assert.deepEqual(renderImages(poolImages(held, members)), [
    "  images     stable  (1.0) aaaaaaaaaaaa  (the target)",
    "             failed  (2.0) bbbbbbbbbbbb  (rolled back from)",
  ]);
  // Going back still (the first rollout failed: nothing stable to return to yet).
  held.status!.deployedDigest = NEW;
  assert.deepEqual(renderImages(poolImages(held, members)), [
    "  images     stable  (2.0) bbbbbbbbbbbb",
    "             new     (1.0) aaaaaaaaaaaa",
    "             failed  (2.0) bbbbbbbbbbbb  (rolled back from)",
  ]);
});

Deno.test("canary steps: updating, soaking with the time left, passed, failed", () => {
  const p = pool();
  const at = (phase: "Updating" | "Soaking" | "Passed" | "Failed") => {
    p.status!.canary = {
      image: p.status!.targetImage!,
      phase,
      nodes: 2,
      soakUntil: "2026-03-01T10:14:00Z",
    };
    return canaryText(p, 1, NOW);
  };
  assert.deepEqual(at("Updating"), {
    text: "step 1/3: updating 2 nodes (1/2 updated)",
    failed: false,
  });
  assert.equal(at("Soaking")?.text, "step 2/3: soaking 2 nodes until 10:14:00 UTC (4m00s left)");
  assert.equal(at("Passed")?.text, "step 3/3: passed; the rest of the pool follows");
  assert.deepEqual(at("Failed"), {
    text: "failed on 2 nodes: the rollout of the target is halted",
    failed: true,
  });
  // A canary for another image (an older target) is not this rollout's.
  p.status!.canary!.image = `${REPO}@${OLD}`;
  assert.equal(canaryText(p, 1, NOW), undefined);
});
