import assert from "node:assert/strict";
import type { Revision } from "../lib/api/schema.ts";
import { currentRevision, planApprove } from "./approve.ts";
import { NEW, OLD, pool, REPO, secondsAgo } from "./testing.ts";

const rev = (revision: number, digest: string, outcome: Revision["outcome"]): Revision => ({
  revision,
  image: `${REPO}@${digest}`,
  digest,
  startedAt: secondsAgo(1000 - revision * 100),
  outcome,
});

/** Pool "main" rolling NEW out as revision 2, asking for approval in `mode`. */
function waiting(mode: "Annotation" | "Webhook" = "Annotation") {
  const p = pool({ target: NEW, deployed: OLD });
  p.metadata.resourceVersion = "41";
  p.spec.rollout.approval = mode === "Webhook"
    ? { mode, webhook: { url: "https://approve.example" } }
    : { mode };
  p.status!.history = [rev(1, OLD, "Succeeded"), rev(2, NEW, "Progressing")];
  return p;
}

Deno.test("approve: sets bootc.dev/approve-revision to the current revision", () => {
  const p = waiting();
  assert.deepEqual(currentRevision(p), { revision: 2, image: `${REPO}@${NEW}` });
  for (const revision of [undefined, 2]) {
    const plan = planApprove(p, revision);
    assert.equal(plan.kind, "patch");
    assert.deepEqual(plan.kind === "patch" && plan.patch, {
      metadata: { resourceVersion: "41", annotations: { "bootc.dev/approve-revision": "2" } },
    });
    assert.match(
      plan.message,
      /^pool main: revision 2 \(registry\.example\/os@sha256:bbbbbbbbbbbb\) approved \(bootc\.dev\/approve-revision=2\): its nodes may take reboot slots$/,
    );
  }
});

Deno.test("approve: refuses another revision, a pool without approvals, and no revision", () => {
  const stale = planApprove(waiting(), 1);
  assert.equal(stale.kind, "nothing");
  assert.equal(
    stale.message,
    "cannot approve revision 1: pool main's current revision is 2 " +
      "(registry.example/os@sha256:bbbbbbbbbbbb); approve that one with kubectl bootc approve " +
      "main --revision 2",
  );
  assert.match(planApprove(waiting(), 3).message, /^cannot approve revision 3: .* is 2/);
  const none = pool({ target: NEW, deployed: OLD });
  assert.match(planApprove(none).message, /asks for no approval \(spec\.rollout\.approval/);
  const unresolved = waiting();
  unresolved.status!.history = [rev(1, OLD, "Succeeded")];
  assert.equal(currentRevision(unresolved), undefined);
  assert.match(planApprove(unresolved).message, /^nothing to approve yet: .* no rollout revision/);
});

Deno.test("approve: the controller's record names the revision; approved is nothing to do", () => {
  const p = waiting("Webhook");
  p.status!.approval = {
    revision: 2,
    image: `${REPO}@${NEW}`,
    verdict: "Refused",
    message: "CHG-9 rejected",
  };
  const over = planApprove(p);
  assert.equal(over.kind, "patch");
  assert.match(over.message, /overrules the webhook's refusal \(CHG-9 rejected\)$/);
  p.status!.approval = { revision: 2, image: `${REPO}@${NEW}` };
  assert.match(planApprove(p).message, /without waiting for the webhook$/);
  p.status!.approval = {
    revision: 2,
    image: `${REPO}@${NEW}`,
    verdict: "Approved",
    message: "approved by bootc.dev/approve-revision=2",
  };
  const done = planApprove(p);
  assert.equal(done.kind, "nothing");
  assert.match(done.message, /^nothing to approve: revision 2 .* is already approved/);
});
