import assert from "node:assert/strict";
import {
  DEFAULT_DRAIN_POLICY,
  describeRefused,
  type DrainContext,
  drainPolicyOf,
  evictionGrace,
  podDisposition,
} from "./drain_policy.ts";
import { pod } from "../testing/fixtures.ts";

const NOW = new Date("2026-01-01T01:00:00Z");

function ctx(policy: Partial<DrainContext["policy"]> = {}, nodeReady = true): DrainContext {
  return { policy: { ...DEFAULT_DRAIN_POLICY, ...policy }, now: NOW, nodeReady };
}

Deno.test("drainPolicyOf: kubectl drain's defaults and Degrade when unset; the spec's values", () => {
  assert.deepEqual(drainPolicyOf(undefined), { deleteEmptyDirData: false, onTimeout: "Degrade" });
  assert.deepEqual(drainPolicyOf({}), {
    keep: undefined,
    gracePeriodSeconds: undefined,
    deleteEmptyDirData: false,
    skipWaitForDeleteTimeoutSeconds: undefined,
    onTimeout: "Degrade",
  });
  const p = drainPolicyOf({
    podSelector: { matchLabels: { app: "longhorn" } },
    gracePeriodSeconds: 5,
    deleteEmptyDirData: true,
    skipWaitForDeleteTimeoutSeconds: 60,
    onTimeout: "Force",
  });
  assert.deepEqual(p.keep, { matchLabels: { app: "longhorn" } });
  assert.equal(p.gracePeriodSeconds, 5);
  assert.equal(p.deleteEmptyDirData, true);
  assert.equal(p.skipWaitForDeleteTimeoutSeconds, 60);
  assert.equal(p.onTimeout, "Force");
});

Deno.test("podDisposition: skip, keep (podSelector), refuse (emptyDir), wait, evict", () => {
  const keep = { keep: { matchLabels: { app: "longhorn" } } };
  assert.equal(podDisposition(pod("ds", "n1", { daemonSet: true }), ctx(keep)), "skip");
  assert.equal(podDisposition(pod("m", "n1", { mirror: true }), ctx(keep)), "skip");
  assert.equal(podDisposition(pod("j", "n1", { completed: true }), ctx(keep)), "skip");
  const lh = pod("im", "n1", { labels: { app: "longhorn" } });
  assert.equal(podDisposition(lh, ctx(keep)), "keep");
  assert.equal(podDisposition(lh, ctx()), "evict", "without a selector it is evicted");
  // Kept even with emptyDir data or terminating: the policy leaves it alone.
  assert.equal(podDisposition({ ...lh, emptyDir: true }, ctx(keep)), "keep");
  const cache = pod("cache", "n1", { emptyDir: true });
  assert.equal(podDisposition(cache, ctx()), "refuse");
  assert.equal(podDisposition(cache, ctx({ deleteEmptyDirData: true })), "evict");
  // Already terminating: waited for, whatever its volumes.
  assert.equal(podDisposition({ ...cache, terminating: true }, ctx()), "wait");
  assert.equal(podDisposition(pod("web", "n1"), ctx()), "evict");
});

Deno.test("podDisposition: skipWaitForDeleteTimeoutSeconds abandons old deletions on NotReady nodes only", () => {
  const old = pod("old", "n1", {
    terminating: true,
    deletionTimestamp: "2026-01-01T00:58:00Z", // 120 s before NOW
  });
  const recent = { ...old, deletionTimestamp: "2026-01-01T00:59:30Z" };
  const skip = { skipWaitForDeleteTimeoutSeconds: 60 };
  assert.equal(podDisposition(old, ctx(skip, false)), "abandon");
  assert.equal(podDisposition(recent, ctx(skip, false)), "wait", "not old enough");
  assert.equal(podDisposition(old, ctx(skip, true)), "wait", "the node is Ready");
  assert.equal(podDisposition(old, ctx({}, false)), "wait", "unset: always waited for");
  assert.equal(podDisposition({ ...old, deletionTimestamp: undefined }, ctx(skip, false)), "wait");
});

Deno.test("evictionGrace: the override, never above the pod's own; unset sends none", () => {
  const long = pod("a", "n1", { terminationGracePeriodSeconds: 120 });
  const short = pod("b", "n1", { terminationGracePeriodSeconds: 3 });
  const p = { ...DEFAULT_DRAIN_POLICY, gracePeriodSeconds: 7 };
  assert.equal(evictionGrace(long, p), 7);
  assert.equal(evictionGrace(short, p), 3);
  assert.equal(evictionGrace(pod("c", "n1"), p), 7, "the API default is 30");
  assert.equal(evictionGrace(pod("d", "n1"), { ...p, gracePeriodSeconds: 45 }), 30);
  assert.equal(evictionGrace(long, DEFAULT_DRAIN_POLICY), undefined);
});

Deno.test("describeRefused: names each pod and the field to set", () => {
  assert.equal(describeRefused([]), undefined);
  assert.equal(
    describeRefused([pod("cache", "n1", { emptyDir: true })]),
    "pod default/cache has emptyDir data (set spec.rollout.drain.deleteEmptyDirData: true " +
      "to evict it)",
  );
  const many = Array.from({ length: 12 }, (_, i) => pod(`p${String(i).padStart(2, "0")}`, "n1"));
  const text = describeRefused(many) ?? "";
  assert.match(text, /^pods default\/p00, .*default\/p09 and 2 more have emptyDir data/);
  assert.match(text, /deleteEmptyDirData: true to evict them/);
});

Deno.test("podDisposition: the acting controller's own pod is left alone; other replicas are evicted", () => {
  const own = pod("bootc-operator-controller-1", "n1", { operator: "own", emptyDir: true });
  assert.equal(podDisposition(own, ctx()), "own");
  assert.equal(podDisposition({ ...own, terminating: true }, ctx()), "own");
  // Another replica: evicted (its emptyDir is the controller's scratch /tmp), waited for.
  const replica = { ...own, operator: "replica" as const };
  assert.equal(podDisposition(replica, ctx()), "evict");
  assert.equal(podDisposition({ ...replica, terminating: true }, ctx()), "wait");
});
