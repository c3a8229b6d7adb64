import assert from "node:assert/strict";
import { ConflictError } from "../lib/kube/errors.ts";
import {
  currentRevision,
  historyMessage,
  pauseMessage,
  pausePatch,
  planRollback,
  repositoryOf,
  rollback,
} from "./actions.ts";
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

function withHistory(p = pool({ ref: `${REPO}:stable`, target: NEW, deployed: OLD })) {
  p.status!.history = [
    {
      revision: 1,
      image: `${REPO}@${OLD}`,
      digest: OLD,
      startedAt: "t1",
      endedAt: "t2",
      outcome: "Succeeded",
    },
    { revision: 2, image: `${REPO}@${NEW}`, digest: NEW, startedAt: "t3", outcome: "Progressing" },
  ];
  return p;
}

Deno.test("rollback pins the newest revision that succeeded before the target", () => {
  const p = withHistory();
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
    `pool main rolled back: spec.image.ref ${REPO}:stable → ${REPO}@${OLD} (revision 1, the ` +
      "last one that succeeded; the rollout of bbbbbbbbbbbb stops there). The pool no longer " +
      `follows ${REPO}:stable; set spec.image.ref back to it to resume.`,
  );
  // A digest ref: no word about tags.
  const pinned = planRollback(withHistory(pool({ ref: `${REPO}@${NEW}`, target: NEW })));
  assert.ok(pinned.kind === "patch" && !pinned.message.includes("no longer follows"));
});

Deno.test("rollback --to-revision picks that revision, and names the known ones when absent", () => {
  const plan = planRollback(withHistory(), 1);
  assert.ok(plan.kind === "patch" && plan.ref === `${REPO}@${OLD}`);
  const missing = planRollback(withHistory(), 7);
  assert.equal(missing.kind, "nothing");
  assert.match(missing.message, /no revision 7 in its history \(revisions: 1, 2\)/);
});

Deno.test("rollback without history falls back to deployedDigest, else says there is nothing", () => {
  const p = pool({ ref: `${REPO}:stable`, target: NEW, deployed: OLD });
  const plan = planRollback(p);
  assert.ok(plan.kind === "patch" && plan.ref === `${REPO}@${OLD}`);
  const same = planRollback(pool({ target: OLD, deployed: OLD }));
  assert.equal(same.kind, "nothing");
  assert.match(same.message, /no earlier revision that succeeded/);
});

Deno.test("repositories: ports, tags and digests", () => {
  assert.equal(repositoryOf("127.0.0.1:5000/bootc/os:v2"), "127.0.0.1:5000/bootc/os");
  assert.equal(repositoryOf(`127.0.0.1:5000/bootc/os@${NEW}`), "127.0.0.1:5000/bootc/os");
  assert.equal(repositoryOf("quay.io/os"), "quay.io/os");
  assert.equal(repositoryOf("localhost:5000/os"), "localhost:5000/os");
});

Deno.test("history lists revisions, marks the target and shows the failure record", () => {
  const p = withHistory();
  p.status!.failedDigests = [NEW];
  p.status!.consecutiveFailures = 1;
  const text = historyMessage(p);
  const lines = text.split("\n");
  assert.match(lines[0], /^REVISION\s+OUTCOME\s+STARTED\s+ENDED\s+DIGEST\s+MESSAGE$/);
  assert.match(lines[1], /^1\s+Succeeded\s+t1\s+t2\s+aaaaaaaaaaaa$/);
  assert.match(lines[2], /^2\*\s+Progressing\s+t3\s+-\s+bbbbbbbbbbbb$/);
  assert.match(text, /failed digests \(never chosen again automatically\): bbbbbbbbbbbb/);
  assert.match(text, /consecutive failed rollouts: 1/);
  assert.match(historyMessage(pool()), /no revision history yet/);
});

Deno.test("history marks only the current revision, not every row of the same digest", () => {
  const p = withHistory(pool({ target: OLD, deployed: OLD }));
  // Rolled back to OLD: revision 3 rolls OLD out again; revision 1 has the same digest.
  p.status!.history![1].outcome = "RolledBack";
  p.status!.history!.push({
    revision: 3,
    image: `${REPO}@${OLD}`,
    digest: OLD,
    startedAt: "t5",
    endedAt: "t6",
    outcome: "Succeeded",
  });
  const lines = historyMessage(p).split("\n");
  assert.match(lines[1], /^1 +Succeeded/);
  assert.match(lines[2], /^2 +RolledBack/);
  assert.match(lines[3], /^3\* +Succeeded/);
  assert.equal(lines.filter((l) => /^\d+\*/.test(l)).length, 1);
  assert.equal(lines[4], "* the current revision: registry.example/os@sha256:aaaaaaaaaaaa");
  assert.equal(currentRevision(p)?.revision, 3);
});

Deno.test("rollback: a conflict reads the pool again and decides again; other errors surface", async () => {
  const reads: string[] = [];
  const patches: Record<string, unknown>[] = [];
  let version = 0;
  const get = () => {
    const p = withHistory();
    p.metadata.resourceVersion = String(++version);
    reads.push(p.metadata.resourceVersion);
    return Promise.resolve(p);
  };
  // The controller wrote the status between the first read and the first patch.
  const done = await rollback({
    get,
    patch: (patch) => {
      patches.push(patch);
      return patches.length === 1
        ? Promise.reject(new ConflictError({ status: 409, reason: "Conflict" }))
        : Promise.resolve();
    },
  });
  assert.equal(done.ok, true);
  assert.deepEqual(reads, ["1", "2"]);
  assert.deepEqual(
    patches.map((p) => (p.metadata as { resourceVersion: string }).resourceVersion),
    [
      "1",
      "2",
    ],
  );
  // Always conflicting: gives up after the attempts, with the conflict.
  await assert.rejects(
    rollback({
      get,
      patch: () => Promise.reject(new ConflictError({ status: 409, reason: "Conflict" })),
      attempts: 3,
    }),
    ConflictError,
  );
  await assert.rejects(
    rollback({ get, patch: () => Promise.reject(new Error("forbidden")) }),
    /forbidden/,
  );
  // Nothing to do: no write at all.
  const nothing = await rollback({
    get,
    patch: () => Promise.reject(new Error("no")),
    toRevision: 9,
  });
  assert.equal(nothing.ok, false);
});
