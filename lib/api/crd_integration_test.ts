/**
 * The generated CRDs on the real API server: bad input is rejected at apply
 * time with a message a user can act on; defaults are filled in; printer columns
 * show progress.
 */
import assert from "node:assert/strict";
import { startControlPlane } from "../../tests/harness/control_plane.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { isInvalid, Resources } from "../kube/mod.ts";
import type { BootcNode, BootcNodePool } from "./mod.ts";

const CRDS = new URL("../../crds/", import.meta.url).pathname;
const digest = "sha256:" + "b".repeat(64);

Deno.test("CRDs validate, default and print on the real API server", async (t) => {
  const cp = await startControlPlane({
    kwok: false,
    controllerManager: false,
    scheduler: false,
    quiet: true,
  });
  try {
    for await (const entry of Deno.readDir(CRDS)) await cp.applyYaml(`${CRDS}${entry.name}`);
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    const nodes = cp.client.resource<BootcNode>(Resources.bootcNodes);
    await waitFor(async () => {
      try {
        return (await pools.list()).items ?? [];
      } catch {
        return undefined;
      }
    }, { timeoutMs: 20_000, message: "CRDs were not served" });

    const pool = (name: string, spec: Record<string, unknown>) =>
      ({
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNodePool",
        metadata: { name },
        spec,
      }) as unknown as BootcNodePool;
    const rejects = async (create: () => Promise<unknown>, pattern: RegExp) => {
      const error = await create().then(() => undefined, (e) => e);
      assert.ok(error, `expected ${pattern} but the object was accepted`);
      assert.ok(isInvalid(error), `expected Invalid, got ${error}`);
      assert.match(String(error.message), pattern);
    };

    await t.step("defaults: maxUnavailable 1, paused false, RebootOnly", async () => {
      const created = await pools.create(
        pool("defaults", { nodeSelector: {}, image: { ref: "quay.io/example/os:latest" } }),
      );
      assert.equal(created.spec.rollout.maxUnavailable, 1);
      assert.equal(created.spec.rollout.paused, false);
      assert.equal(created.spec.disruption.rebootPolicy, "RebootOnly");
    });

    await t.step("a malformed image reference is refused with a readable message", async () => {
      await rejects(
        () => pools.create(pool("bad-ref", { nodeSelector: {}, image: { ref: "Quay.io/OS:" } })),
        /spec\.image\.ref: Invalid value.*must be a container image reference/,
      );
    });

    await t.step("maxUnavailable must be >= 1 or 1%-100%", async () => {
      for (const value of [0, "0%", "101%", "abc", -1]) {
        await rejects(
          () =>
            pools.create(pool(`mu-${String(value).replace(/[^a-z0-9]/g, "x")}`, {
              nodeSelector: {},
              image: { ref: "quay.io/example/os:latest" },
              rollout: { maxUnavailable: value },
            })),
          /maxUnavailable.*must be an integer >= 1 or a percentage from 1% to 100%/,
        );
      }
      const ok = await pools.create(pool("mu-ok", {
        nodeSelector: {},
        image: { ref: "quay.io/example/os:latest" },
        rollout: { maxUnavailable: "25%" },
      }));
      assert.equal(ok.spec.rollout.maxUnavailable, "25%");
    });

    await t.step("rebootPolicy is an enum; required fields are required", async () => {
      await rejects(
        () =>
          pools.create(pool("bad-policy", {
            nodeSelector: {},
            image: { ref: "quay.io/example/os:latest" },
            disruption: { rebootPolicy: "Sometimes" },
          })),
        /rebootPolicy: Unsupported value: "Sometimes"/,
      );
      await rejects(
        () => pools.create(pool("no-image", { nodeSelector: {} })),
        /spec\.image: Required value/,
      );
    });

    await t.step("BootcNode.desiredImage must be digest-pinned", async () => {
      const node = (name: string, spec: Record<string, unknown>) =>
        ({
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNode",
          metadata: { name },
          spec,
        }) as unknown as BootcNode;
      await rejects(
        () => nodes.create(node("n1", { desiredImage: "quay.io/example/os:latest" })),
        /desiredImage: Invalid value.*must be pinned by digest/,
      );
      await rejects(
        () =>
          nodes.create(node("n2", {
            desiredImage: `quay.io/example/os@${digest}`,
            desiredImageState: "Rebooted",
          })),
        /desiredImageState: Unsupported value: "Rebooted"/,
      );
      const ok = await nodes.create(node("n3", { desiredImage: `quay.io/example/os@${digest}` }));
      assert.equal(ok.spec.desiredImageState, "Staged");
    });

    await t.step("kubectl shows progress columns and short names", async () => {
      const res = await cp.kubectl(["get", "bnp", "-o", "wide"]);
      assert.equal(res.code, 0, res.stderr);
      const header = res.stdout.split("\n")[0];
      for (
        const column of [
          "TARGET",
          "NODES",
          "UPDATED",
          "UPDATING",
          "DEGRADED",
          "UPTODATE",
          "STATE",
          "AGE",
          "IMAGE",
          "PAUSED",
        ]
      ) {
        assert.ok(header.includes(column), `${column} missing from: ${header}`);
      }
      const bn = await cp.kubectl(["get", "bn"]);
      assert.equal(bn.code, 0, bn.stderr);
      for (const column of ["POOL", "DESIRED", "BOOTED", "STATE", "DEGRADED"]) {
        assert.ok(bn.stdout.includes(column), `${column} missing from: ${bn.stdout}`);
      }
    });
  } finally {
    await cp.stop();
  }
});
