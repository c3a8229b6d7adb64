/**
 * Pull secrets end to end: a pool whose image lives in a registry that requires
 * credentials. The controller resolves the tag with the pool's pull Secret and
 * hashes it into every BootcNode; each daemon fetches the Secret and writes the
 * host's /run/ostree/auth.json, which the (simulated) bootc pulls with. Without
 * the Secret nothing is staged and nothing reboots; with it the rollout finishes;
 * rotating it reaches every host.
 */
import assert from "node:assert/strict";
import type { ISecret } from "kubernetes-models/v1/Secret";
import { findCondition } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { startRegistry } from "../harness/registry.ts";
import { OPERATOR_NAMESPACE, startStack } from "../harness/stack.ts";
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

Deno.test("pull secrets: tag resolution and pulls use the pool's Secret", async (t) => {
  const secure = await startRegistry({ auth: "htpasswd", users: { alice: "wonderland" } });
  const stack = await startStack({
    limits: { private: { maxUnavailable: 1 } },
    controllerArgs: ["--insecure-registry", secure.host],
  }).catch(async (e) => {
    await secure.stop();
    throw e;
  });
  try {
    const pushed = await secure.pushImage({ repository: "private/os", tag: "v2", version: "2.0" });
    const ref = `${secure.host}/private/os:v2`;
    const nodes = await addNodes(stack, "private", 2);
    for (const n of nodes) {
      await stack.fleet.nodes.get(n)!.host.updateSettings({
        insecureRegistries: [stack.registry.host, secure.host],
      });
    }
    const secrets = stack.cp.client.resource<ISecret & { metadata: { name: string } }>(
      Resources.secrets,
      OPERATOR_NAMESPACE,
    );

    await step(
      t,
      "without the Secret: resolution fails with a message; nothing reboots",
      async () => {
        await stack.createPool(
          "private",
          poolSpec("private", ref, {}, {
            pullSecretRef: { name: "registry-creds", namespace: OPERATOR_NAMESPACE },
          }),
        );
        const pool = await waitPool(stack, "private", async () => {
          const p = await getPool(stack, "private");
          return findCondition(p.status?.conditions, "Degraded")?.reason ===
              "ImageResolutionFailed" && p;
        }, "the pool should report the failed resolution");
        const message = findCondition(pool.status?.conditions, "Degraded")!.message;
        assert.match(message, /registry-creds|unauthorized|credentials/i, message);
        assert.equal(stack.fleet.rebootCount, 0);
      },
    );

    await step(
      t,
      "with the Secret: resolved, pulled with it on every host, rolled out",
      async () => {
        await secrets.create({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "registry-creds", namespace: OPERATOR_NAMESPACE },
          type: "kubernetes.io/dockerconfigjson",
          data: { ".dockerconfigjson": b64(secure.dockerConfigJson("alice")) },
        });
        await waitConverged(stack, "private", pushed.digest, 2);
        for (const bn of await poolNodes(stack, "private")) {
          assert.ok(bn.spec.pullSecretHash, "the Secret's hash is in the BootcNode spec");
          assert.deepEqual(bn.spec.pullSecretRef, {
            name: "registry-creds",
            namespace: OPERATOR_NAMESPACE,
          });
        }
        for (const n of nodes) {
          const root = stack.fleet.nodes.get(n)!.host.root;
          const auth = JSON.parse(await Deno.readTextFile(`${root}/run/ostree/auth.json`));
          assert.ok(auth.auths[secure.host], `${n}: auth.json has the registry's credentials`);
          assert.equal((await Deno.stat(`${root}/run/ostree/auth.json`)).mode! & 0o777, 0o600);
        }
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "rotating the Secret bumps the hash and reaches every host", async () => {
      const before = (await poolNodes(stack, "private")).map((bn) => bn.spec.pullSecretHash);
      const rotated = secure.dockerConfigJson("alice", "wonderland");
      const withNote = JSON.stringify({ ...JSON.parse(rotated), note: "rotated" });
      await secrets.patch("registry-creds", {
        data: { ".dockerconfigjson": b64(withNote) },
      }, { type: "merge" });
      await waitPool(stack, "private", async () => {
        const bns = await poolNodes(stack, "private");
        if (!bns.every((bn, i) => bn.spec.pullSecretHash && bn.spec.pullSecretHash !== before[i])) {
          return false;
        }
        for (const n of nodes) {
          const root = stack.fleet.nodes.get(n)!.host.root;
          const text = await Deno.readTextFile(`${root}/run/ostree/auth.json`).catch(() => "");
          if (!text.includes("rotated")) return false;
        }
        return true;
      }, "every host should get the rotated Secret");
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
