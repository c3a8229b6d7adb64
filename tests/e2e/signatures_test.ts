/**
 * Signature verification end to end, with images signed by the real cosign: under
 * Enforce a tag moved to an unsigned image is refused (no BootcNode names it, nobody
 * reboots, the pool says SignatureInvalid naming it) and signing it lets it roll out;
 * under Audit an unsigned image rolls out with the verdict in status and a Warning.
 * A channel passes over a version that does not verify and takes it once signed; its key,
 * in a Secret, is InvalidSpec naming the field until the Secret exists.
 */
import assert from "node:assert/strict";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import { findCondition } from "../../lib/api/mod.ts";
import { shortReference } from "../../lib/api/display.ts";
import type { ISecret } from "kubernetes-models/v1/Secret";
import { type KubeObject, Resources } from "../../lib/kube/mod.ts";
import { OPERATOR_NAMESPACE, startStack } from "../harness/stack.ts";
import { POLICY_FILE } from "../../daemon/host_policy.ts";
import { waitFor } from "../harness/wait.ts";
import type { BootcNode } from "../../lib/api/mod.ts";

type Secret = ISecret & KubeObject;
import { keyPair, sign } from "../cosign/cosign.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

Deno.test("signatures: Enforce refuses an unsigned image; Audit reports it", async () => {
  const stack = await startStack({
    limits: { trust: { maxUnavailable: 1 }, ctrust: { maxUnavailable: 1 } },
  });
  const { v1, v2, repository } = stack.images;
  const dir = await Deno.makeTempDir({ prefix: "cosign-e2e-" });
  try {
    const [key, nodes] = await Promise.all([keyPair(dir, "release"), addNodes(stack, "trust", 2)]);
    const channel = channelSkipsUnverified(stack, key);
    await sign(`${repository}@${v1.digest}`, key.key);
    await stack.registry.tagExisting("bootc/os", "v1", "stable");
    const ref = `${repository}:stable`;
    await stack.createPool(
      "trust",
      poolSpec("trust", ref, { maxUnavailable: 1 }, {
        image: { ref, verification: { mode: "Enforce", keys: [{ pem: key.pem }] } },
      }),
    );
    const on1 = await waitConverged(stack, "trust", v1.digest, 2, 180_000);
    assert.equal(on1.status?.verification?.verified, true);
    assert.equal(on1.status?.verification?.by, "keys[0]");

    // The tag moves to an unsigned image: refused, named, and nothing moves towards it.
    const slotsOfTrust = () => stack.tracker.intervals.filter((i) => nodes.includes(i.node));
    const slotsBefore = slotsOfTrust().length;
    await stack.registry.tagExisting("bootc/os", "v2", "stable");
    const refused = await waitPool(
      stack,
      "trust",
      async () => {
        const p = await getPool(stack, "trust");
        const d = findCondition(p.status?.conditions, "Degraded");
        return d?.status === "True" && d.reason === "SignatureInvalid" ? d : undefined;
      },
      "Degraded=True/SignatureInvalid",
      90_000,
    );
    assert.match(refused.message ?? "", new RegExp(v2.digest.slice(7, 19)));
    assert.match(refused.message ?? "", /no signature/);
    const held = await getPool(stack, "trust");
    assert.equal(held.status?.targetDigest, v1.digest);
    assert.equal(held.status?.state, "SignatureInvalid");
    for (const bn of await poolNodes(stack, "trust")) {
      assert.notEqual(bn.spec.desiredImage, `${repository}@${v2.digest}`, bn.metadata.name);
    }
    assert.equal(slotsOfTrust().length, slotsBefore, "no slot for an untrusted image");
    await hostRefusesBypass(stack, nodes[0], `${repository}@${v2.digest}`);

    // Signed, it verifies on the next check and rolls out.
    await sign(`${repository}@${v2.digest}`, key.key);
    const on2 = await waitConverged(stack, "trust", v2.digest, 2, 240_000);
    assert.equal(on2.status?.verification?.image, `${repository}@${v2.digest}`);
    assert.equal(findCondition(on2.status?.conditions, "Degraded")?.status, "False");

    // Audit: an unsigned image rolls out, and the pool says it did not verify.
    const v3 = await stack.registry.pushImage({
      repository: "bootc/os",
      tag: "stable",
      version: "3.0",
    });
    await patchPoolSpec(stack, "trust", {
      image: { verification: { mode: "Audit", keys: [{ pem: key.pem }] } },
    });
    const on3 = await waitConverged(stack, "trust", v3.digest, 2, 240_000);
    assert.equal(on3.status?.verification?.verified, false);
    const warned = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list({
      fieldSelector: "involvedObject.name=trust,reason=SignatureUnverified",
    });
    assert.ok(
      warned.items.some((e) =>
        e.type === "Warning" &&
        (e.message ?? "").includes(shortReference(`${repository}@${v3.digest}`))
      ),
      JSON.stringify(warned.items.map((e) => e.message)),
    );
    await assertInvariants(stack, [...nodes, ...await channel]);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await stopStack(stack);
  }
});

/**
 * The host enforces too: its daemon wrote the pool's key into the host's policy for the
 * repository. With the controller stopped, a BootcNode set by hand to the unsigned `image`
 * is refused by the host's pull (reported, never staged); the restarted controller puts the
 * node's image back.
 */
async function hostRefusesBypass(
  stack: Awaited<ReturnType<typeof startStack>>,
  node: string,
  image: string,
): Promise<void> {
  const root = stack.fleet.nodes.get(node)!.host.root;
  const policy = JSON.parse(await Deno.readTextFile(`${root}/${POLICY_FILE}`));
  const scope = image.slice(0, image.indexOf("@"));
  assert.equal(policy.transports.docker[scope][0].type, "sigstoreSigned");
  const bootcNodes = stack.cp.client.resource<BootcNode>(Resources.bootcNodes);
  const before = (await bootcNodes.get(node)).spec.desiredImage;
  await stack.killController();
  await bootcNodes.patch(node, { spec: { desiredImage: image } }, { type: "merge" });
  const refused = await waitFor(async () => {
    const bn = await bootcNodes.get(node);
    const d = findCondition(bn.status?.conditions, "Degraded");
    return d?.status === "True" && /A signature was required/.test(d.message ?? "")
      ? bn
      : undefined;
  }, { timeoutMs: 60_000, intervalMs: 300, message: `${node}'s host refusing the unsigned image` });
  assert.notEqual(refused.status?.staged?.imageDigest, image.slice(image.indexOf("@") + 1));
  await stack.startController();
  await waitFor(
    async () => (await bootcNodes.get(node)).spec.desiredImage === before || undefined,
    { timeoutMs: 60_000, intervalMs: 300, message: `the controller putting ${node}'s image back` },
  );
}

/**
 * A channel pool under Enforce: 1.1.0 is unsigned, so the channel stays on 1.0.0 and
 * says why (no BootcNode ever names 1.1.0); once 1.1.0 is signed, the channel takes it.
 * Returns the pool's nodes.
 */
async function channelSkipsUnverified(
  stack: Awaited<ReturnType<typeof startStack>>,
  key: Awaited<ReturnType<typeof keyPair>>,
): Promise<string[]> {
  const repository = `${stack.registry.host}/bootc/ctrust`;
  const push = (tag: string) =>
    stack.registry.pushImage({ repository: "bootc/ctrust", tag, version: tag });
  const v100 = await push("1.0.0");
  const v110 = await push("1.1.0");
  await sign(`${repository}@${v100.digest}`, key.key);
  const nodes = await addNodes(stack, "ctrust", 1, { image: `${repository}@${v100.digest}` });
  await stack.createPool(
    "ctrust",
    poolSpec("ctrust", "", { maxUnavailable: 1 }, {
      image: {
        channel: { repository, constraint: ">=1.0" },
        verification: { mode: "Enforce", keys: [{ secretRef: { name: "ctrust-key" } }] },
      },
    }),
  );
  // Its key Secret does not exist yet: InvalidSpec naming the field; then it is created.
  const missing = await waitPool(
    stack,
    "ctrust",
    async () => {
      const d = findCondition((await getPool(stack, "ctrust")).status?.conditions, "Degraded");
      return d?.reason === "InvalidSpec" ? d : undefined;
    },
    "Degraded=True/InvalidSpec for the missing key Secret",
    60_000,
  );
  assert.match(
    missing.message ?? "",
    /keys\[0\]\.secretRef: Secret bootc-operator\/ctrust-key not found/,
  );
  await stack.cp.client.resource<Secret>(Resources.secrets, OPERATOR_NAMESPACE).create({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "ctrust-key", namespace: OPERATOR_NAMESPACE },
    stringData: { "cosign.pub": key.pem },
  });
  const passed = await waitPool(
    stack,
    "ctrust",
    async () => {
      const p = await getPool(stack, "ctrust");
      const c = p.status?.channel;
      return c?.currentVersion === "1.0.0" && p.status?.targetDigest === v100.digest &&
          /1\.1\.0 does not verify/.test(c.message ?? "")
        ? p
        : undefined;
    },
    "channel on 1.0.0, passing over the unsigned 1.1.0",
    120_000,
  );
  assert.equal(passed.status?.channel?.unverifiedVersions?.[0]?.version, "1.1.0");
  for (const bn of await poolNodes(stack, "ctrust")) {
    assert.equal(bn.spec.desiredImage, `${repository}@${v100.digest}`, bn.metadata.name);
  }
  assert.deepEqual(stack.tracker.intervals.filter((i) => nodes.includes(i.node)), []);
  await sign(`${repository}@${v110.digest}`, key.key);
  const on110 = await waitConverged(stack, "ctrust", v110.digest, 1, 180_000);
  assert.equal(on110.status?.channel?.currentVersion, "1.1.0");
  return nodes;
}
