/**
 * Pull secrets end to end, with the operator's own least-privilege credentials (node-bound
 * daemon tokens): pools whose image lives in a registry that requires credentials.
 *
 * One model: a pool's pull Secret must be a `kubernetes.io/dockerconfigjson` Secret in the
 * operator's namespace. A missing Secret, one of another type or one in another namespace is an
 * `InvalidSpec` naming it; malformed content is `PullSecretInvalid` naming it, and every host
 * keeps the auth file it had. The controller resolves tags with the Secret, hashes it into every
 * BootcNode and lets the daemons read exactly the Secrets pools name (their Role's
 * resourceNames); each daemon writes the host's /run/ostree/auth.json, which the (simulated)
 * bootc pulls with; rotating the Secret reaches every host of every pool that uses it.
 */
import assert from "node:assert/strict";
import type { ISecret } from "kubernetes-models/v1/Secret";
import { type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import { type KubeObject, Resources } from "../../lib/kube/mod.ts";
import { startRegistry } from "../harness/registry.ts";
import { OPERATOR_NAMESPACE, type Stack, startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

const encoder = new TextEncoder();
const b64 = (s: string) => btoa(String.fromCharCode(...encoder.encode(s)));
type Secret = ISecret & { metadata: { name: string } };
type Role = KubeObject & { rules?: { resourceNames?: string[]; verbs: string[] }[] };

/** Waits until the pool's Degraded condition has `reason` and a message matching `message`. */
function waitDegraded(
  stack: Stack,
  pool: string,
  reason: string,
  message: RegExp,
): Promise<BootcNodePool> {
  return waitPool(stack, pool, async () => {
    const p = await getPool(stack, pool);
    const degraded = findCondition(p.status?.conditions, "Degraded");
    return degraded?.status === "True" && degraded.reason === reason &&
      message.test(degraded.message ?? "") && p;
  }, `pool ${pool} should be Degraded/${reason} matching ${message}`);
}

/** The Secret names the daemon's pull-secret Role grants (none when it has no rule). */
async function daemonSecretNames(stack: Stack): Promise<string[]> {
  const role = await stack.cp.client.resource<Role>(Resources.roles, OPERATOR_NAMESPACE).get(
    "bootc-operator-daemon-pull-secrets",
  );
  return (role.rules ?? []).flatMap((r) => {
    assert.deepEqual(r.verbs, ["get"]);
    assert.ok(r.resourceNames?.length, "a rule without resourceNames would grant every Secret");
    return r.resourceNames!;
  });
}

Deno.test("pull secrets: one model, clear errors, rotation reaches every host", async (t) => {
  const secure = await startRegistry({ auth: "htpasswd", users: { alice: "wonderland" } });
  const stack = await startStack({
    limits: { private: { maxUnavailable: 1 }, shared: { maxUnavailable: 1 } },
    controllerArgs: ["--insecure-registry", secure.host],
  }).catch(async (e) => {
    await secure.stop();
    throw e;
  });
  try {
    const pushed = await secure.pushImage({ repository: "private/os", tag: "v2", version: "2.0" });
    const ref = `${secure.host}/private/os:v2`;
    const privateNodes = await addNodes(stack, "private", 2);
    const sharedNodes = await addNodes(stack, "shared", 2);
    const hosts = [...privateNodes, ...sharedNodes];
    for (const n of hosts) {
      await stack.fleet.nodes.get(n)!.host.updateSettings({
        insecureRegistries: [stack.registry.host, secure.host],
      });
    }
    const secrets = stack.cp.client.resource<Secret>(Resources.secrets, OPERATOR_NAMESPACE);
    const credsRef = { name: "registry-creds", namespace: OPERATOR_NAMESPACE };
    const authFile = (node: string) =>
      `${stack.fleet.nodes.get(node)!.host.root}/run/ostree/auth.json`;
    const readAuth = (node: string) => Deno.readTextFile(authFile(node)).catch(() => undefined);

    await step(
      t,
      "a Secret that does not exist: InvalidSpec naming it; nothing reboots",
      async () => {
        await stack.createPool(
          "private",
          poolSpec("private", ref, {}, { pullSecretRef: credsRef }),
        );
        await waitDegraded(
          stack,
          "private",
          "InvalidSpec",
          /pull secret bootc-operator\/registry-creds: Secret not found/,
        );
        assert.equal(stack.fleet.rebootCount, 0);
        assert.deepEqual(await daemonSecretNames(stack), []);
      },
    );

    await step(t, "a Secret of another type: InvalidSpec naming it and its type", async () => {
      await secrets.create({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "opaque-creds", namespace: OPERATOR_NAMESPACE },
        type: "Opaque",
        data: { ".dockerconfigjson": b64(secure.dockerConfigJson("alice")) },
      });
      await stack.createPool(
        "opaque",
        poolSpec("opaque", ref, {}, {
          pullSecretRef: { name: "opaque-creds", namespace: OPERATOR_NAMESPACE },
        }),
      );
      await waitDegraded(
        stack,
        "opaque",
        "InvalidSpec",
        /pull secret bootc-operator\/opaque-creds has type Opaque; only kubernetes\.io\/dockerconfigjson Secrets are supported/,
      );
      // Never granted to the daemons.
      assert.deepEqual(await daemonSecretNames(stack), []);
    });

    await step(t, "a Secret in another namespace: InvalidSpec naming it", async () => {
      // A perfectly good Secret, but where the daemons cannot read it.
      await stack.cp.client.resource<Secret>(Resources.secrets, "default").create({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "registry-creds", namespace: "default" },
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": b64(secure.dockerConfigJson("alice")) },
      });
      await stack.createPool(
        "elsewhere",
        poolSpec("elsewhere", ref, {}, {
          pullSecretRef: { name: "registry-creds", namespace: "default" },
        }),
      );
      await waitDegraded(
        stack,
        "elsewhere",
        "InvalidSpec",
        /pull secret default\/registry-creds: pull secrets must be in the operator's namespace bootc-operator/,
      );
    });

    await step(t, "with the Secret: both pools resolve, pull with it and roll out", async () => {
      await secrets.create({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "registry-creds", namespace: OPERATOR_NAMESPACE },
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": b64(secure.dockerConfigJson("alice")) },
      });
      await stack.createPool("shared", poolSpec("shared", ref, {}, { pullSecretRef: credsRef }));
      await waitConverged(stack, "private", pushed.digest, 2);
      await waitConverged(stack, "shared", pushed.digest, 2);
      for (const pool of ["private", "shared"]) {
        for (const bn of await poolNodes(stack, pool)) {
          assert.ok(bn.spec.pullSecretHash, "the Secret's hash is in the BootcNode spec");
          assert.deepEqual(bn.spec.pullSecretRef, credsRef);
        }
      }
      for (const n of hosts) {
        const auth = JSON.parse((await readAuth(n))!);
        assert.ok(auth.auths[secure.host], `${n}: auth.json has the registry's credentials`);
        assert.equal((await Deno.stat(authFile(n))).mode! & 0o777, 0o600);
      }
      // The daemons may read exactly the one Secret pools use (not the Opaque one).
      assert.deepEqual(await daemonSecretNames(stack), ["registry-creds"]);
      await assertInvariants(stack, hosts);
    });

    await step(
      t,
      "malformed content: PullSecretInvalid naming it; hosts keep their file",
      async () => {
        const before = new Map<string, string | undefined>();
        for (const n of hosts) before.set(n, await readAuth(n));
        const bad = JSON.stringify({ auths: { [secure.host]: { auth: "%%% not base64 %%%" } } });
        await secrets.patch("registry-creds", { data: { ".dockerconfigjson": b64(bad) } }, {
          type: "merge",
        });
        const problem = new RegExp(
          `pull secret bootc-operator/registry-creds is not a valid \\.dockerconfigjson: ` +
            `the "auth" of "${secure.host.replace(/\./g, "\\.")}" is not base64`,
        );
        for (const pool of ["private", "shared"]) {
          await waitDegraded(stack, pool, "PullSecretInvalid", problem);
        }
        // Every daemon fetched the new content and refused it (it says so on its BootcNode)...
        for (const pool of ["private", "shared"]) {
          await waitPool(stack, pool, async () => {
            const bns = await poolNodes(stack, pool);
            return bns.length === 2 && bns.every((bn) => {
              const degraded = findCondition(bn.status?.conditions, "Degraded");
              return degraded?.status === "True" && problem.test(degraded.message ?? "");
            });
          }, `every daemon of ${pool} should report the malformed Secret`);
        }
        // ...and wrote nothing: each host keeps the auth file it had.
        for (const n of hosts) assert.equal(await readAuth(n), before.get(n), n);
      },
    );

    await step(t, "rotating the Secret reaches every host of both pools", async () => {
      const rotated = JSON.stringify({
        ...JSON.parse(secure.dockerConfigJson("alice", "wonderland")),
        note: "rotated",
      });
      const started = performance.now();
      await secrets.patch("registry-creds", { data: { ".dockerconfigjson": b64(rotated) } }, {
        type: "merge",
      });
      await waitPool(
        stack,
        "shared",
        async () => {
          for (const n of hosts) if (!(await readAuth(n))?.includes("rotated")) return false;
          return true;
        },
        "every host of both pools should get the rotated Secret",
        30_000,
      );
      const seconds = (performance.now() - started) / 1000;
      console.log(`rotation reached ${hosts.length} hosts of 2 pools in ${seconds.toFixed(2)} s`);
      for (const n of hosts) assert.equal(await readAuth(n), rotated, n);
      // The pools and nodes recover on their own.
      for (const pool of ["private", "shared"]) {
        await waitPool(stack, pool, async () => {
          const p = await getPool(stack, pool);
          return findCondition(p.status?.conditions, "Degraded")?.status === "False" && p;
        }, `pool ${pool} should be healthy again`);
      }
      assert.deepEqual(await daemonSecretNames(stack), ["registry-creds"]);
    });

    await step(t, "no daemon was ever refused a Secret it was told to read", async () => {
      // The controller grants a Secret before it writes it into any BootcNode, and never
      // hands the daemons a reference it refused.
      const refusals: string[] = [];
      for await (const entry of Deno.readDir(stack.logDir)) {
        if (!entry.isFile || !/^daemon-.*\.log$/.test(entry.name)) continue;
        const text = await Deno.readTextFile(`${stack.logDir}/${entry.name}`);
        for (const line of text.split("\n")) {
          if (/may not read it|forbidden|\b403\b/i.test(line)) {
            refusals.push(`${entry.name}: ${line.slice(0, 300)}`);
          }
        }
      }
      assert.deepEqual(refusals, [], refusals.join("\n"));
    });

    await step(t, "a deleted pool's Secret leaves the daemons' Role", async () => {
      // No pool uses the Secret any more (no reconcile of theirs follows): the Role drops it.
      for (const pool of ["private", "shared"]) {
        await stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools).delete(pool);
      }
      await waitPool(
        stack,
        "private",
        async () => (await daemonSecretNames(stack)).length === 0,
        "the daemon Role should name no Secret once no pool uses one",
      );
    });
  } catch (error) {
    console.error(`stack logs kept in ${stack.logDir}`);
    await stack.stop({ keepLogs: true });
    await secure.stop();
    throw error;
  }
  await stopStack(stack);
  await secure.stop();
});
