import assert from "node:assert/strict";
import { historyMessage, pauseMessage, pausePatch, planRollback, repositoryOf } from "./actions.ts";
import { NEW, OLD, pool, REPO } from "./testing.ts";

Deno.test("pause and resume patch spec.rollout.paused and say what changed", () => {
  assert.deepEqual(pausePatch(true), { spec: { rollout: { paused: true } } });
  assert.deepEqual(pausePatch(false), { spec: { rollout: { paused: false } } });
  assert.match(pauseMessage(pool(), true), /^pool main paused: no new reboot slots/);
  assert.equal(pauseMessage(pool({ paused: true }), true), "pool main was already paused");
  assert.equal(
    pauseMessage(pool({ paused: true }), false),
    "pool main resumed: reboot slots are handed out again",
  );
  assert.equal(pauseMessage(pool(), false), "pool main was not paused");
});

Deno.test("rollback pins the last fully rolled-out digest in the target's repository", () => {
  const p = pool({ ref: `${REPO}:stable`, target: NEW, deployed: OLD });
  p.metadata.resourceVersion = "42";
  const plan = planRollback(p);
  assert.equal(plan.kind, "patch");
  if (plan.kind !== "patch") return;
  assert.equal(plan.ref, `${REPO}@${OLD}`);
  assert.deepEqual(plan.patch, {
    metadata: { resourceVersion: "42" },
    spec: { image: { ref: `${REPO}@${OLD}` } },
  });
  assert.equal(
    plan.message,
    `pool main rolled back: spec.image.ref ${REPO}:stable → ${REPO}@${OLD} (the last digest ` +
      "fully rolled out; the rollout of bbbbbbbbbbbb stops there). The pool no longer follows " +
      `${REPO}:stable; set spec.image.ref back to it to resume.`,
  );
  // A digest ref: no word about tags.
  const pinned = planRollback(pool({ ref: `${REPO}@${NEW}`, target: NEW, deployed: OLD }));
  assert.ok(pinned.kind === "patch" && !pinned.message.includes("no longer follows"));
});

Deno.test("rollback: nothing to roll back to when the target is the deployed digest or none is", () => {
  const same = planRollback(pool({ target: OLD, deployed: OLD }));
  assert.equal(same.kind, "nothing");
  assert.match(same.message, /already targets aaaaaaaaaaaa.*issue 14/);
  const never = pool();
  delete never.status!.deployedDigest;
  assert.match(planRollback(never).message, /never fully rolled out/);
});

Deno.test("repositories: ports, tags and digests", () => {
  assert.equal(repositoryOf("127.0.0.1:5000/bootc/os:v2"), "127.0.0.1:5000/bootc/os");
  assert.equal(repositoryOf(`127.0.0.1:5000/bootc/os@${NEW}`), "127.0.0.1:5000/bootc/os");
  assert.equal(repositoryOf("quay.io/os"), "quay.io/os");
  assert.equal(repositoryOf("localhost:5000/os"), "localhost:5000/os");
});

Deno.test("history says it is not available yet and what rollback would do", () => {
  const text = historyMessage(pool());
  assert.match(text, /^revision history is not available yet \(issue 14/);
  assert.match(text, new RegExp(`last fully rolled out: ${OLD}`));
});
