/** The object-check poller against a stand-in API: verdicts, discovery, refusals, restarts. */
import assert from "node:assert/strict";
import type { ObjectPrecondition } from "../../lib/api/mod.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { fakeTransport, jsonResponse, statusResponse } from "../../lib/kube/testing.ts";
import type { ObjectVerdict } from "../model/object_check.ts";
import { ObjectChecks } from "./object_checks.ts";

const CEPH: ObjectPrecondition = {
  apiVersion: "ceph.rook.io/v1",
  kind: "CephCluster",
  namespace: "rook-ceph",
  name: "rook",
  expression: 'object.status.ceph.health == "HEALTH_OK"',
};

/** A stand-in API serving CephClusters; `world` is read at each request. */
function standIn(world: { health: string; forbidden?: boolean }) {
  const transport = fakeTransport((req) => {
    if (req.path === "/apis/ceph.rook.io/v1") {
      return jsonResponse({
        resources: [
          { name: "cephclusters", kind: "CephCluster", namespaced: true },
          { name: "cephclusters/status", kind: "CephCluster", namespaced: true },
        ],
      });
    }
    if (req.path.startsWith("/apis/nope.example/")) return statusResponse(404, "NotFound");
    if (world.forbidden) return statusResponse(403, "Forbidden", "cephclusters is forbidden");
    if (req.path === "/apis/ceph.rook.io/v1/namespaces/rook-ceph/cephclusters/rook") {
      return jsonResponse({
        metadata: { name: "rook", namespace: "rook-ceph" },
        status: { ceph: { health: world.health } },
      });
    }
    return statusResponse(404, "NotFound");
  });
  return transport;
}

/** Calls `want` until its first verdict is no longer `before` (bounded). */
async function nextVerdict(
  checks: ObjectChecks,
  pool: string,
  want: readonly ObjectPrecondition[],
  before?: ObjectVerdict,
): Promise<(ObjectVerdict | undefined)[]> {
  for (let i = 0; i < 200; i++) {
    const verdicts = checks.want(pool, want);
    if (verdicts[0] && JSON.stringify(verdicts[0]) !== JSON.stringify(before)) return verdicts;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no new verdict after ${JSON.stringify(before)}`);
}

Deno.test("ObjectChecks: a verdict per check, a change is reported, discovery is cached", async () => {
  const world = { health: "HEALTH_WARN" };
  const transport = standIn(world);
  const changed: string[] = [];
  const checks = new ObjectChecks({
    client: new KubeClient({ transport }),
    intervalMs: 5,
    onResult: (p) => changed.push(p),
  });
  try {
    assert.deepEqual(checks.want("ceph", [CEPH]), [undefined]);
    const failed = await nextVerdict(checks, "ceph", [CEPH]);
    assert.equal(failed[0]?.state, "failed");
    world.health = "HEALTH_OK";
    assert.deepEqual(await nextVerdict(checks, "ceph", [CEPH], failed[0]), [{ state: "passed" }]);
    assert.ok(changed.length >= 2 && changed.every((p) => p === "ceph"), changed.join());
    const discovery = transport.requests.filter((r) => r.path === "/apis/ceph.rook.io/v1");
    assert.equal(discovery.length, 1, "the kind is discovered once, then cached");
  } finally {
    await checks.close();
  }
});

Deno.test("ObjectChecks: refusals name the permission; unknown kinds and groups are named", async () => {
  const world = { health: "HEALTH_OK", forbidden: true };
  const checks = new ObjectChecks({ client: new KubeClient({ transport: standIn(world) }) });
  try {
    const [refused] = await nextVerdict(checks, "a", [CEPH]);
    assert.deepEqual(refused, {
      state: "error",
      message: "CephCluster rook-ceph/rook: the controller may not get cephclusters.ceph.rook.io " +
        "in namespace rook-ceph: grant it get on cephclusters.ceph.rook.io (a ClusterRole " +
        "bound to its ServiceAccount)",
    });
    const [noKind] = await nextVerdict(checks, "b", [{ ...CEPH, kind: "CephPool" }]);
    assert.equal(noKind?.state, "error");
    assert.match(
      noKind?.state === "error" ? noKind.message : "",
      /serves no kind CephPool in ceph\.rook\.io\/v1/,
    );
    const [noGroup] = await nextVerdict(checks, "c", [{ ...CEPH, apiVersion: "nope.example/v1" }]);
    assert.match(noGroup?.state === "error" ? noGroup.message : "", /serves no nope\.example\/v1/);
    const [unscoped] = await nextVerdict(checks, "d", [{ ...CEPH, namespace: undefined }]);
    assert.match(
      unscoped?.state === "error" ? unscoped.message : "",
      /is namespaced: set namespace/,
    );
  } finally {
    await checks.close();
  }
});

Deno.test("ObjectChecks: new checks restart the pool's verdicts; none stops its loop", async () => {
  const transport = standIn({ health: "HEALTH_OK" });
  const checks = new ObjectChecks({ client: new KubeClient({ transport }), intervalMs: 5 });
  try {
    assert.deepEqual(await nextVerdict(checks, "p", [CEPH]), [{ state: "passed" }]);
    const other = { ...CEPH, expression: "false" };
    assert.deepEqual(checks.want("p", [other]), [undefined], "a changed check starts unread");
    assert.equal((await nextVerdict(checks, "p", [other]))[0]?.state, "failed");
    assert.deepEqual(checks.want("p", []), []);
    await new Promise((r) => setTimeout(r, 30));
    const seen = transport.requests.length;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(transport.requests.length, seen, "a pool without checks is not polled");
  } finally {
    await checks.close();
  }
});
