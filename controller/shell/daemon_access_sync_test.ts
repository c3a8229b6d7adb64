import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import {
  fakeTransport,
  jsonResponse,
  type RecordedRequest,
  statusResponse,
} from "../../lib/kube/testing.ts";
import { DAEMON_PULL_SECRETS_ROLE, type PolicyRule } from "../model/daemon_access.ts";
import { DaemonAccessSync } from "./daemon_access_sync.ts";

const PATH = `/apis/rbac.authorization.k8s.io/v1/namespaces/ops/roles/${DAEMON_PULL_SECRETS_ROLE}`;

/** A fake API server holding one Role (or none); conflicts can be injected. */
function fakeRoleApi(initial: PolicyRule[] | undefined) {
  let role = initial === undefined ? undefined : {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: DAEMON_PULL_SECRETS_ROLE, namespace: "ops", resourceVersion: "1" },
    rules: initial,
  };
  let conflicts = 0;
  const transport = fakeTransport((req: RecordedRequest) => {
    assert.equal(req.path, PATH);
    if (!role) return statusResponse(404, "NotFound");
    if (req.method === "GET") return jsonResponse(role);
    if (req.method === "PUT") {
      if (conflicts > 0) {
        conflicts--;
        role = { ...role, metadata: { ...role.metadata, resourceVersion: "99" } };
        return statusResponse(409, "Conflict");
      }
      const body = req.json as typeof role;
      assert.equal(body.metadata.resourceVersion, role.metadata.resourceVersion);
      role = { ...body, metadata: { ...body.metadata, resourceVersion: "2" } };
      return jsonResponse(role);
    }
    throw new Error(`unexpected ${req.method}`);
  });
  return {
    client: new KubeClient({ transport }),
    requests: transport.requests,
    get rules() {
      return role?.rules;
    },
    /** An outside edit (e.g. a re-applied old manifest). */
    set rules(rules: PolicyRule[] | undefined) {
      if (role) role = { ...role, rules: rules ?? [] };
    },
    conflictNext(n: number) {
      conflicts = n;
    },
  };
}

function syncer(api: ReturnType<typeof fakeRoleApi>, names: () => string[], clock?: FakeClock) {
  let writes = 0;
  const sync = new DaemonAccessSync({
    client: api.client,
    namespace: "ops",
    desiredNames: names,
    resyncMs: 60_000,
    clock,
    onWrite: () => writes++,
  });
  return { sync, writes: () => writes };
}

Deno.test("DaemonAccessSync writes the named Secrets, then costs nothing until they change", async () => {
  const api = fakeRoleApi([{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }]);
  let names = ["b", "a"];
  const { sync, writes } = syncer(api, () => names);
  await sync.ensure();
  assert.deepEqual(api.rules, [
    { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["a", "b"] },
  ]);
  assert.equal(writes(), 1);
  const before = api.requests.length;
  await sync.ensure();
  await sync.ensure();
  assert.equal(api.requests.length, before, "unchanged names: no request");
  // No Secret named any more: the rule goes away (an empty resourceNames would grant all).
  names = [];
  await sync.ensure();
  assert.deepEqual(api.rules, []);
  assert.equal(writes(), 2);
  // An outside edit goes unseen by the memo; force re-reads the Role and repairs it.
  names = ["a"];
  await sync.ensure();
  assert.equal(writes(), 3);
  api.rules = [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }];
  await sync.ensure();
  assert.equal(writes(), 3);
  await sync.ensure({ force: true });
  assert.deepEqual(api.rules?.[0].resourceNames, ["a"]);
  assert.equal(writes(), 4);
  await sync.ensure({ force: true });
  assert.equal(writes(), 4, "a forced re-read of a Role already right writes nothing");
});

Deno.test("DaemonAccessSync retries a write conflict with a fresh read", async () => {
  const api = fakeRoleApi([]);
  const { sync } = syncer(api, () => ["a"]);
  api.conflictNext(1);
  await sync.ensure();
  assert.deepEqual(api.rules?.[0].resourceNames, ["a"]);
  assert.deepEqual(api.requests.map((r) => r.method), ["GET", "PUT", "GET", "PUT"]);
});

Deno.test("DaemonAccessSync: a missing Role is fine with nothing to grant, an error otherwise", async () => {
  const api = fakeRoleApi(undefined);
  let names: string[] = [];
  const { sync } = syncer(api, () => names);
  await sync.ensure();
  names = ["a"];
  await assert.rejects(sync.ensure(), /Role ops\/bootc-operator-daemon-pull-secrets not found.*a/);
});

Deno.test("DaemonAccessSync.run syncs at once, on notify, and re-reads after resyncMs", async () => {
  const api = fakeRoleApi([]);
  let names = ["a"];
  const clock = new FakeClock();
  const { sync } = syncer(api, () => names, clock);
  const ac = new AbortController();
  const running = sync.run(ac.signal);
  const until = async (cond: () => boolean, what: string) => {
    const deadline = Date.now() + 5_000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 1));
    }
  };
  try {
    await until(() => api.rules?.[0]?.resourceNames?.[0] === "a", "the first sync");
    names = ["a", "b"];
    sync.notify();
    await until(() => api.rules?.[0]?.resourceNames?.length === 2, "the sync after notify");
    const gets = api.requests.filter((r) => r.method === "GET").length;
    clock.advance(60_000);
    await until(
      () => api.requests.filter((r) => r.method === "GET").length === gets + 1,
      "the periodic re-read",
    );
  } finally {
    ac.abort();
    await running;
  }
});
