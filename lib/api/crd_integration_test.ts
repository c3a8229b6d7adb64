/**
 * The generated CRDs on the real API server: bad input is rejected at apply
 * time with a message a user can act on; defaults are filled in; printer columns
 * show progress.
 */
import assert from "node:assert/strict";
import { startCrdApiServer } from "../../tests/harness/crd_api_server.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { isInvalid, Resources } from "../kube/mod.ts";
import type { BootcNode, BootcNodePool } from "./mod.ts";
import { selectorError } from "../../controller/model/selector.ts";

const digest = "sha256:" + "b".repeat(64);

Deno.test("CRDs validate, default and print on the real API server", async (t) => {
  const cp = await startCrdApiServer();
  try {
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    const nodes = cp.client.resource<BootcNode>(Resources.bootcNodes);

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

    await t.step(
      "defaults: maxUnavailable 1, paused false, RebootOnly, stall deadlines",
      async () => {
        const created = await pools.create(
          pool("defaults", { nodeSelector: {}, image: { ref: "quay.io/example/os:latest" } }),
        );
        assert.equal(created.spec.rollout.maxUnavailable, 1);
        assert.equal(created.spec.rollout.paused, false);
        assert.equal(created.spec.rollout.stagingTimeoutSeconds, 1800);
        assert.equal(created.spec.rollout.daemonReportTimeoutSeconds, 300);
        assert.equal(created.spec.disruption.rebootPolicy, "RebootOnly");
        const set = await pools.create(pool("deadlines", {
          nodeSelector: {},
          image: { ref: "quay.io/example/os:latest" },
          rollout: { stagingTimeoutSeconds: 60, daemonReportTimeoutSeconds: 30 },
        }));
        assert.equal(set.spec.rollout.stagingTimeoutSeconds, 60);
        assert.equal(set.spec.rollout.daemonReportTimeoutSeconds, 30);
        for (const field of ["stagingTimeoutSeconds", "daemonReportTimeoutSeconds"]) {
          await rejects(
            () =>
              pools.create(pool(`zero-${field.toLowerCase()}`, {
                nodeSelector: {},
                image: { ref: "quay.io/example/os:latest" },
                rollout: { [field]: 0 },
              })),
            new RegExp(`spec\\.rollout\\.${field}: Invalid value: 0: .*greater than or equal to 1`),
          );
        }
      },
    );

    await t.step("kubectl explain describes the stall deadlines", async () => {
      // The CRD's OpenAPI is published asynchronously after it is established.
      for (
        const [field, text] of [["stagingTimeoutSeconds", /StagingTimeout/], [
          "daemonReportTimeoutSeconds",
          /DaemonNotReporting/,
        ]] as const
      ) {
        const out = await waitFor(async () => {
          const res = await cp.kubectl(["explain", `bootcnodepools.spec.rollout.${field}`]);
          return res.code === 0 && text.test(res.stdout) ? res.stdout : undefined;
        }, { timeoutMs: 60_000, intervalMs: 500, message: `kubectl explain ${field}` });
        assert.match(out, /integer/);
      }
    });

    await t.step("a pool name longer than 63 characters is refused, saying why", async () => {
      const spec = { nodeSelector: {}, image: { ref: "quay.io/example/os:latest" } };
      await rejects(
        () => pools.create(pool("p".repeat(64), spec)),
        /metadata\.name: Invalid value.*must be at most 63 characters: the pool name is the value of the bootc\.dev\/pool label/,
      );
      const ok = await pools.create(pool("p".repeat(63), spec));
      assert.equal(ok.metadata.name, "p".repeat(63));
    });

    await t.step("nodeSelector: what never matches is refused; the controller agrees", async () => {
      const prefix253 = `${"a".repeat(63)}.`.repeat(3) + "a".repeat(61);
      // [selector, expected message] (undefined: accepted). Every case is also run
      // through the controller's own check, which must reach the same verdict.
      const cases: [Record<string, unknown>, RegExp | undefined][] = [
        [
          { matchLabels: { "bad key": "x" } },
          /spec\.nodeSelector\.matchLabels: Invalid value.*key "bad key" is not a valid label key/,
        ],
        [
          { matchLabels: { "example.com//role": "x" } },
          /matchLabels: Invalid value.*key "example\.com\/\/role" is not a valid label key/,
        ],
        [
          { matchLabels: { [`${prefix253}a/role`]: "x" } },
          /matchLabels: Invalid value.*is not a valid label key: an optional DNS subdomain prefix of at most 253/,
        ],
        [
          { matchLabels: { zone: "bad value!" } },
          /spec\.nodeSelector\.matchLabels\[zone\]: Invalid value: "bad value!": must be a valid label value/,
        ],
        [
          { matchLabels: { zone: "v".repeat(64) } },
          /spec\.nodeSelector\.matchLabels\.zone: Too long: may not be more than 63/,
        ],
        [
          { matchExpressions: [{ key: "zone", operator: "In" }] },
          /matchExpressions\[0\]\.values: Invalid value.*operator In requires at least one value/,
        ],
        [
          { matchExpressions: [{ key: "zone", operator: "NotIn", values: [] }] },
          /matchExpressions\[0\]\.values: Invalid value.*operator NotIn requires at least one value/,
        ],
        [
          { matchExpressions: [{ key: "zone", operator: "Exists", values: ["a"] }] },
          /matchExpressions\[0\]\.values: Invalid value.*operator Exists must not have values/,
        ],
        [
          { matchExpressions: [{ key: "zone", operator: "DoesNotExist", values: ["a"] }] },
          /operator DoesNotExist must not have values/,
        ],
        [
          { matchExpressions: [{ key: "zone", operator: "Bogus" }] },
          /matchExpressions\[0\]\.operator: Unsupported value: "Bogus"/,
        ],
        [
          { matchExpressions: [{ key: "a b", operator: "Exists" }] },
          /matchExpressions\[0\]\.key: Invalid value: "a b": must be a valid label key/,
        ],
        [
          { matchExpressions: [{ key: "zone", operator: "In", values: ["ok", "not ok"] }] },
          /matchExpressions\[0\]\.values\[1\]: Invalid value: "not ok": must be a valid label value/,
        ],
        [{}, undefined],
        [
          {
            matchLabels: {
              "example.com/role": "worker",
              "node-role.kubernetes.io/worker": "",
              [`${prefix253}/${"n".repeat(63)}`]: "v".repeat(63),
              "Zone_1.a-b": "A-b_c.9",
            },
            matchExpressions: [
              { key: "kubernetes.io/hostname", operator: "In", values: ["n1", ""] },
              { key: "zone", operator: "NotIn", values: ["c"] },
              { key: "example.com/gpu", operator: "Exists" },
              { key: "legacy", operator: "DoesNotExist", values: [] },
            ],
          },
          undefined,
        ],
      ];
      for (const [i, [nodeSelector, pattern]] of cases.entries()) {
        const create = () =>
          pools.create(pool(`sel-${i}`, {
            nodeSelector,
            image: { ref: "quay.io/example/os:latest" },
          }));
        const local = selectorError(nodeSelector);
        if (pattern) {
          await rejects(create, pattern);
          assert.ok(local, `controller accepts what the API server refused: ${pattern}`);
        } else {
          const created = await create();
          assert.deepEqual(created.spec.nodeSelector, nodeSelector);
          assert.equal(local, undefined, `controller refuses what the API server accepted`);
        }
      }
    });

    await t.step("pullSecretRef must name a Secret and a namespace by valid names", async () => {
      const withRef = (name: string, ref: Record<string, string>) =>
        pool(name, {
          nodeSelector: {},
          image: { ref: "quay.io/example/os:latest" },
          pullSecretRef: ref,
        });
      await rejects(
        () =>
          pools.create(withRef("ref-name", { name: "../nodes/x", namespace: "bootc-operator" })),
        /spec\.pullSecretRef\.name: Invalid value: "\.\.\/nodes\/x": must be a valid Secret name/,
      );
      await rejects(
        () => pools.create(withRef("ref-ns", { name: "pull", namespace: "Bootc_Operator" })),
        /spec\.pullSecretRef\.namespace: Invalid value: "Bootc_Operator": must be a valid namespace name/,
      );
      const ok = await pools.create(
        withRef("ref-ok", { name: "pull.secret-1", namespace: "bootc-operator" }),
      );
      assert.equal(ok.spec.pullSecretRef?.name, "pull.secret-1");
    });

    await t.step(
      "schedules, time zones, durations and budgets: bad ones named by field",
      async () => {
        const base = { nodeSelector: {}, image: { ref: "quay.io/example/os:latest" } };
        const ok = await pools.create(pool("policy", {
          ...base,
          timeZone: "Europe/Berlin",
          rollout: {
            maxUnavailable: "20%",
            budgets: [{ maxUnavailable: 1, schedule: "0 9 * * 1-5", duration: "8h" }, {
              maxUnavailable: 0,
            }],
            maxStaging: "10%",
            after: ["infra"],
            canary: { nodes: 1, soakSeconds: 60 },
          },
          maintenance: {
            windows: [{ schedule: "0 22 * * 6", duration: "6h" }],
            blackouts: [{ start: "2026-12-20T00:00:00+01:00", end: "2027-01-03T00:00:00+01:00" }],
          },
        }));
        assert.equal(ok.spec.maintenance?.stageOutsideWindows, true);
        assert.equal(ok.spec.rollout?.canary?.notReadyGraceSeconds, 0);
        const bad: [string, Record<string, unknown>, RegExp][] = [
          [
            "cron",
            { maintenance: { windows: [{ schedule: "every saturday", duration: "6h" }] } },
            /spec\.maintenance\.windows\[0\]\.schedule: Invalid value.*valid cron schedule: use five fields/,
          ],
          [
            "duration",
            { maintenance: { windows: [{ schedule: "0 22 * * 6", duration: "6 hours" }] } },
            /spec\.maintenance\.windows\[0\]\.duration: Invalid value.*must be a duration of hours/,
          ],
          [
            "zero-duration",
            { maintenance: { windows: [{ schedule: "0 22 * * 6", duration: "0h" }] } },
            /windows\[0\]\.duration: Invalid value.*from 1s to 87600h/,
          ],
          ["zone", { timeZone: "Berlin Time" }, /spec\.timeZone: Invalid value.*IANA time zone/],
          [
            "budget-pair",
            { rollout: { budgets: [{ maxUnavailable: 1, schedule: "0 9 * * *" }] } },
            /spec\.rollout\.budgets\[0\]: Invalid value.*schedule and duration must be set together/,
          ],
          [
            "budget-negative",
            { rollout: { budgets: [{ maxUnavailable: -1 }] } },
            /spec\.rollout\.budgets\[0\]\.maxUnavailable: Invalid value.*integer >= 0/,
          ],
          [
            "blackout-order",
            {
              maintenance: {
                blackouts: [{ start: "2027-01-03T00:00:00Z", end: "2026-12-20T00:00:00Z" }],
              },
            },
            /spec\.maintenance\.blackouts\[0\]: Invalid value.*end must be after start/,
          ],
          ["staging", { rollout: { maxStaging: 0 } }, /spec\.rollout\.maxStaging: Invalid value/],
          [
            "canary-grace",
            { rollout: { canary: { nodes: 1, soakSeconds: 20, notReadyGraceSeconds: 21 } } },
            /spec\.rollout\.canary: Invalid value.*notReadyGraceSeconds must not be longer than soakSeconds/,
          ],
        ];
        for (const [name, extra, pattern] of bad) {
          await rejects(() => pools.create(pool(`bad-${name}`, { ...base, ...extra })), pattern);
        }
      },
    );

    await t.step(
      "BootcDisruptionBudget: valid, and topology fields need a topologyKey",
      async () => {
        const budgets = cp.client.resource<
          Record<string, unknown> & { metadata: { name?: string } }
        >(
          Resources.bootcDisruptionBudgets,
        );
        const budget = (name: string, spec: Record<string, unknown>) => ({
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcDisruptionBudget",
          metadata: { name },
          spec,
        });
        await budgets.create(budget("zones", {
          maxUnavailable: 3,
          topologyKey: "topology.kubernetes.io/zone",
          maxUnavailablePerDomain: 1,
          maxDomainsUnavailable: 1,
        }));
        await rejects(
          () => budgets.create(budget("no-key", { maxUnavailable: 1, maxDomainsUnavailable: 1 })),
          /maxUnavailablePerDomain and maxDomainsUnavailable need a topologyKey/,
        );
        await rejects(
          () => budgets.create(budget("zero", { maxUnavailable: 0 })),
          /spec\.maxUnavailable: Invalid value.*integer >= 1/,
        );
        const res = await cp.kubectl(["get", "bdb", "zones"]);
        assert.equal(res.code, 0, res.stderr);
        assert.match(res.stdout, /MAXUNAVAILABLE/);
      },
    );

    await t.step("a malformed image reference is refused with a readable message", async () => {
      await rejects(
        () => pools.create(pool("bad-ref", { nodeSelector: {}, image: { ref: "Quay.io/OS:" } })),
        /spec\.image\.ref: Invalid value.*must be a container image reference/,
      );
    });

    await t.step(
      "image: exactly one of ref and channel; a channel names a repository",
      async () => {
        const channel = { repository: "quay.io/example/os", constraint: "~1.4" };
        await rejects(
          () =>
            pools.create(pool("both", {
              nodeSelector: {},
              image: { ref: "quay.io/example/os:latest", channel },
            })),
          /set exactly one of ref \(a fixed image\) and channel/,
        );
        await rejects(
          () => pools.create(pool("neither", { nodeSelector: {}, image: {} })),
          /set exactly one of ref/,
        );
        await rejects(
          () =>
            pools.create(pool("tagged", {
              nodeSelector: {},
              image: { channel: { ...channel, repository: "quay.io/example/os:1.4" } },
            })),
          /must be a repository without tag or digest/,
        );
        await rejects(
          () =>
            pools.create(pool("badcron", {
              nodeSelector: {},
              image: { channel: { ...channel, schedule: "every saturday" } },
            })),
          /spec\.image\.channel\.schedule: Invalid value.*valid cron schedule: use five fields/,
        );
        const ok = await pools.create(pool("channel", {
          nodeSelector: {},
          image: {
            channel: { ...channel, repository: "127.0.0.1:5000/bootc/os", schedule: "0 22 * * 6" },
          },
        }));
        assert.equal(ok.spec.image.channel?.preRelease, "Exclude");
      },
    );

    await t.step("image.verification: a mode and PEM public keys", async () => {
      const ref = "quay.io/example/os:latest";
      const pem = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n";
      await rejects(
        () =>
          pools.create(pool("sig-notpem", {
            nodeSelector: {},
            image: { ref, verification: { mode: "Enforce", keys: [{ pem: "ssh-ed25519 AAAA" }] } },
          })),
        /spec\.image\.verification\.keys\[0\]\.pem: Invalid value.*must be a PEM public key/,
      );
      await rejects(
        () =>
          pools.create(pool("sig-nokeys", {
            nodeSelector: {},
            image: { ref, verification: { mode: "Enforce", keys: [] } },
          })),
        /spec\.image\.verification\.keys: Invalid value.*should have at least 1 items/,
      );
      await rejects(
        () =>
          pools.create(pool("sig-mode", {
            nodeSelector: {},
            image: { ref, verification: { mode: "Warn", keys: [{ pem }] } },
          })),
        /spec\.image\.verification\.mode: Unsupported value: "Warn"/,
      );
      const keyCases: [string, Record<string, unknown>][] = [
        ["sig-both", { pem, secretRef: { name: "k" } }],
        ["sig-none", {}],
      ];
      for (const [name, key] of keyCases) {
        await rejects(
          () =>
            pools.create(pool(name, {
              nodeSelector: {},
              image: { ref, verification: { mode: "Enforce", keys: [key as { pem: string }] } },
            })),
          /spec\.image\.verification\.keys\[0\]: Invalid value.*set exactly one of pem .* and secretRef/,
        );
      }
      const ok = await pools.create(pool("sig-ok", {
        nodeSelector: {},
        image: {
          ref,
          verification: { mode: "Audit", keys: [{ pem }, { secretRef: { name: "cosign" } }] },
        },
      }));
      assert.equal(ok.spec.image.verification?.mode, "Audit");
      assert.equal(ok.spec.image.verification?.keys[1].secretRef?.key, "cosign.pub");
    });

    await t.step("preconditions.alerts: an http URL and Prometheus label names", async () => {
      const at = (alerts: Record<string, unknown>) => ({
        nodeSelector: {},
        image: { ref: "quay.io/example/os:latest" },
        rollout: { maxUnavailable: 1, preconditions: { alerts } },
      });
      await rejects(
        () => pools.create(pool("al-url", at({ url: "prometheus:9090" }))),
        /spec\.rollout\.preconditions\.alerts\.url: Invalid value.*must be an http:\/\/ or https:\/\/ URL/,
      );
      await rejects(
        () =>
          pools.create(pool("al-label", at({ url: "http://p:9090", matchLabels: { "a-b": "x" } }))),
        /spec\.rollout\.preconditions\.alerts\.matchLabels: Invalid value.*Prometheus label names/,
      );
      await rejects(
        () => pools.create(pool("al-mode", at({ url: "http://p:9090", onUnreachable: "Ignore" }))),
        /spec\.rollout\.preconditions\.alerts\.onUnreachable: Unsupported value: "Ignore"/,
      );
      const ok = await pools.create(pool("al-ok", at({ url: "http://p:9090" })));
      assert.equal(ok.spec.rollout.preconditions?.alerts?.onUnreachable, "Hold");
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
          "DEGRADEDNODES",
          "UPTODATE",
          "STATE",
          "AGE",
          "IMAGE",
          "PAUSED",
          "REVISION",
          "CANARY",
          "CIRCUIT",
          "TARGETDIGEST",
          "NEXTRESOLUTION",
        ]
      ) {
        assert.ok(header.includes(column), `${column} missing from: ${header}`);
      }
      const bn = await cp.kubectl(["get", "bn"]);
      assert.equal(bn.code, 0, bn.stderr);
      for (
        const column of ["POOL", "STATE", "DETAIL", "VERSION", "TARGET", "SINCE", "AGE"]
      ) {
        assert.ok(bn.stdout.includes(column), `${column} missing from: ${bn.stdout}`);
      }
      const wide = await cp.kubectl(["get", "bn", "-o", "wide"]);
      assert.equal(wide.code, 0, wide.stderr);
      for (
        const column of [
          "PHASE",
          "DESIREDSTATE",
          "DESIRED",
          "BOOTED",
          "STAGED",
          "VERIFIED",
          "DEGRADED",
          "HEALTH",
          "STALLED",
          "REBOOT",
          "MESSAGE",
        ]
      ) {
        assert.ok(wide.stdout.includes(column), `${column} missing from: ${wide.stdout}`);
      }
    });
  } finally {
    await cp.stop();
  }
});
