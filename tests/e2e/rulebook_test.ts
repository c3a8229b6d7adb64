/**
 * End-to-end checks of issue 22 ("one rulebook"): every defect it lists, on the
 * real control plane, controller and daemons. Each step runs on pools of its
 * own (named after the step, so a violation the invariant checker records is
 * charged to the step that caused it) and hands its nodes back when done.
 *
 * - rollouts whose target is the hosts' rollback deployment complete (the
 *   demo's pause / new tag / back / resume sequence, and with another image
 *   staged);
 * - a node that leaves its pool mid-reboot, or whose pool is retargeted to its
 *   booted image mid-reboot, keeps counting until it is back: never 2 disrupted
 *   at maxUnavailable 1 (the harness's invariant checker samples continuously);
 * - a canary that goes NotReady during a 20 s soak fails it and the pool rolls
 *   back;
 * - a drain blocked by a PodDisruptionBudget is named within 30 s;
 * - `kubectl bootc why` on a node that failed verification says it failed;
 * - nodes a gate holds back (maxStaging, stageOutsideWindows: false) are waiting,
 *   never degraded;
 * - a node moved between pools stalls no pool's planning.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import {
  type BootcNode,
  type BootcNodePool,
  findCondition,
  holdsRebootSlot,
  isDisrupted,
  LABEL_POOL,
} from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { BAD_BOOT_LABEL } from "../bootc_sim/bad_boot.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  describePool,
  getPool,
  idleReason,
  kubectlBootc,
  nodesByName,
  patchPoolSpec,
  poolNodes,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "./scenario.ts";

/** Generous bound for anything that takes a few reboots on a loaded 2-core machine. */
const LONG_MS = 180_000;

const POOLS = [
  "dl",
  "rbs",
  "leave",
  "retg",
  "cnr",
  "pdbf",
  "whyf",
  "hwin",
  "hstg",
  "mva",
  "mvb",
  "mvc",
];

/**
 * `RULEBOOK_STEPS=a,c` runs only those steps (their ids are the letters before the colon);
 * unset, every step runs.
 */
const ONLY = Deno.env.get("RULEBOOK_STEPS")?.split(",").map((s) => s.trim()).filter(Boolean);

/** {@linkcode step}, unless `RULEBOOK_STEPS` leaves it out. */
async function scenario(
  t: Deno.TestContext,
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
): Promise<void> {
  const id = name.slice(0, name.indexOf(":"));
  if (ONLY && !ONLY.includes(id)) return;
  await step(t, name, fn);
}

function nodesApi(stack: Stack) {
  return stack.cp.client.resource<INode>(Resources.nodes);
}
function bootcNodesApi(stack: Stack) {
  return stack.cp.client.resource<BootcNode>(Resources.bootcNodes);
}
function poolsApi(stack: Stack) {
  return stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** True when `text` names `word` as a whole (pool or node name). */
function names(text: string, word: string): boolean {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^A-Za-z0-9-])${escaped}(-\\d+)?($|[^A-Za-z0-9-])`).test(text);
}

/** The invariant violations so far that concern any of `pools` (or their nodes). */
function violationsOf(stack: Stack, pools: string[]): string[] {
  return stack.tracker.violations.filter((v) => pools.some((p) => names(v, p)));
}

/**
 * The scenario's invariant verdict, scoped to its pools and nodes: no violation
 * charged to them, and the end state of its nodes is clean.
 */
async function assertScoped(stack: Stack, pools: string[], nodes: string[]): Promise<void> {
  const mine = new Set(nodes);
  const [nodeList, bootcNodes] = await Promise.all([
    nodesApi(stack).list(),
    bootcNodesApi(stack).list(),
  ]);
  const problems = [
    ...violationsOf(stack, pools),
    ...stack.tracker.checkFinal(
      nodeList.items.filter((n) => mine.has(n.metadata?.name ?? "")),
      bootcNodes.items.filter((bn) => mine.has(bn.metadata.name ?? "")),
    ),
    ...stack.fleet.errors.filter((e) => nodes.some((n) => e.includes(n))),
  ];
  assert.deepEqual(problems, [], problems.join("\n"));
}

/**
 * Hands a scenario's nodes back (best effort, bounded): deletes the pools (their
 * finalizer releases the nodes) and removes the hosts, so idle daemons do not
 * load the machine for the steps that follow.
 */
async function retire(stack: Stack, pools: string[], nodes: string[]): Promise<void> {
  for (const n of nodes) {
    const member = stack.fleet.nodes.get(n);
    if (member) member.holdDown = false;
  }
  await Promise.all(pools.map((p) => poolsApi(stack).delete(p).catch(() => {})));
  await waitFor(async () => {
    const list = await poolsApi(stack).list();
    return !list.items.some((p) => pools.includes(p.metadata?.name ?? ""));
  }, { timeoutMs: 60_000, message: `pools ${pools.join(", ")} deleted` }).catch((e) =>
    console.error(`retire: ${e instanceof Error ? e.message : e}`)
  );
  for (const n of nodes) await stack.fleet.removeNode(n).catch(() => {});
}

/** `repository@digest` of an image. */
function pinned(stack: Stack, digest: string): string {
  return `${stack.images.repository}@${digest}`;
}

/** Waits until every node of `pool` is Idle=Staged with `digest` staged for it. */
async function waitAllStaged(
  stack: Stack,
  pool: string,
  count: number,
  digest: string,
): Promise<BootcNode[]> {
  return await waitNodes(
    stack,
    pool,
    (bns) =>
      bns.length === count &&
      bns.every((bn) =>
        bn.spec.desiredImage.endsWith(digest) && idleReason(bn) === "Staged" &&
        bn.status?.staged?.imageDigest === digest
      ),
    `every node of ${pool} staged ${digest.slice(7, 19)}`,
    LONG_MS,
  );
}

/** Every message of the conditions, as one text. */
function conditionText(conditions: { type: string; message?: string }[] | undefined): string {
  return (conditions ?? []).map((c) => `${c.type}: ${c.message ?? ""}`).join("\n");
}

/** One pool's slot holders, sampled over time, and when each was back / released. */
interface SlotTimeline {
  granted: Map<string, number>;
  back: Map<string, number>;
  released: Map<string, number>;
}

/**
 * Samples `pool` every 250 ms until `signal` aborts: when each node took its slot,
 * came back (booted `digest`, Node Ready) while holding it, and gave it back.
 */
async function sampleSlots(
  stack: Stack,
  pool: string,
  digest: string,
  signal: AbortSignal,
): Promise<SlotTimeline> {
  const t: SlotTimeline = { granted: new Map(), back: new Map(), released: new Map() };
  while (!signal.aborted) {
    try {
      const [bns, nodes] = await Promise.all([poolNodes(stack, pool), nodesByName(stack)]);
      const now = Date.now();
      for (const bn of bns) {
        const name = bn.metadata.name ?? "";
        const node = nodes.get(name);
        const holds = node !== undefined && holdsRebootSlot(node);
        const ready = node?.status?.conditions?.some((c) =>
          c.type === "Ready" && c.status === "True"
        );
        if (holds && !t.granted.has(name)) t.granted.set(name, now);
        if (
          holds && !t.back.has(name) && ready && bn.status?.booted?.imageDigest === digest
        ) t.back.set(name, now);
        if (!holds && t.granted.has(name) && !t.released.has(name)) t.released.set(name, now);
      }
    } catch {
      // A transient API error: sample again.
    }
    await sleep(250);
  }
  return t;
}

Deno.test("rulebook (issue 22): one classification, no deadlock, no silent wait", async (t) => {
  const stack = await startStack({
    limits: Object.fromEntries(POOLS.map((p) => [p, { maxUnavailable: 1 }])),
  });
  const { v1, v2, repository } = stack.images;
  const ref1 = pinned(stack, v1.digest);
  const ref2 = pinned(stack, v2.digest);
  const v3 = await stack.registry.pushImage({ repository: "bootc/os", tag: "v3", version: "3.0" });
  const ref3 = pinned(stack, v3.digest);

  /** A pool of `count` nodes booted into v1, rolled out to v2 (so v1 is their rollback). */
  const poolOnV2 = async (name: string, count: number, ref: string) => {
    const nodes = await addNodes(stack, name, count);
    await stack.createPool(name, poolSpec(name, ref, { maxUnavailable: 1 }));
    await waitConverged(stack, name, v2.digest, count, LONG_MS);
    const bns = await poolNodes(stack, name);
    for (const bn of bns) {
      assert.equal(bn.status?.rollback?.imageDigest, v1.digest, `${bn.metadata.name} rollback`);
    }
    return nodes;
  };

  try {
    await scenario(
      t,
      "a: pause, new tag staged, back to the booted tag, resume, then the rollback deployment",
      async () => {
        const nodes = await poolOnV2("dl", 2, `${repository}:v2`);
        await patchPoolSpec(stack, "dl", { rollout: { paused: true } });
        await patchPoolSpec(stack, "dl", { image: { ref: `${repository}:v3` } });
        await waitAllStaged(stack, "dl", 2, v3.digest);
        // Back to the booted image: the daemons replace the staged v3 with a copy of it.
        await patchPoolSpec(stack, "dl", { image: { ref: `${repository}:v2` } });
        await waitNodes(
          stack,
          "dl",
          (bns) =>
            bns.length === 2 && bns.every((bn) =>
              bn.spec.desiredImage.endsWith(v2.digest) &&
              bn.status?.staged?.imageDigest !== v3.digest &&
              findCondition(bn.status?.conditions, "Idle")?.status === "True"
            ),
          "the daemons drop the staged v3 (staged = booted)",
          LONG_MS,
        );
        await patchPoolSpec(stack, "dl", { rollout: { paused: false } });
        // v1 is now every host's rollback deployment.
        await patchPoolSpec(stack, "dl", { image: { ref: `${repository}:v1` } });
        await waitConverged(stack, "dl", v1.digest, 2, 120_000);
        await assertScoped(stack, ["dl"], nodes);
        await retire(stack, ["dl"], nodes);
      },
    );

    await scenario(
      t,
      "d: a retarget to the rollback deployment while another image is staged completes",
      async () => {
        const nodes = await poolOnV2("rbs", 2, ref2);
        await patchPoolSpec(stack, "rbs", { rollout: { paused: true } });
        await patchPoolSpec(stack, "rbs", { image: { ref: ref3 } });
        await waitAllStaged(stack, "rbs", 2, v3.digest);
        await patchPoolSpec(stack, "rbs", { image: { ref: ref1 } });
        await patchPoolSpec(stack, "rbs", { rollout: { paused: false } });
        await waitConverged(stack, "rbs", v1.digest, 2, 120_000);
        await assertScoped(stack, ["rbs"], nodes);
        await retire(stack, ["rbs"], nodes);
      },
    );

    await scenario(
      t,
      "b: a node relabelled out of its pool mid-reboot keeps counting until it is back",
      async () => {
        const pool = "leave";
        const nodes = await addNodes(stack, pool, 3);
        await stack.createPool(pool, poolSpec(pool, ref1, { maxUnavailable: 1 }));
        await waitConverged(stack, pool, v1.digest, 3, LONG_MS);
        for (const n of nodes) stack.fleet.nodes.get(n)!.holdDown = true;
        try {
          await patchPoolSpec(stack, pool, { image: { ref: ref2 } });
          const victim = await waitPool(
            stack,
            pool,
            () => Promise.resolve(nodes.find((n) => stack.fleet.nodes.get(n)?.rebooting)),
            "a node of the pool goes down for its reboot",
            LONG_MS,
          );
          // Only the victim stays down; the others reboot normally when their turn comes.
          for (const n of nodes) if (n !== victim) stack.fleet.nodes.get(n)!.holdDown = false;
          await nodesApi(stack).patch(victim, { metadata: { labels: { pool: null } } }, {
            type: "merge",
          });
          // The old controller released the node ~1.5 s after the relabel and granted the
          // next slot at once; the checker sees 2 disrupted. Watch for a bounded while.
          const end = Date.now() + 10_000;
          while (Date.now() < end) {
            const v = violationsOf(stack, [pool]);
            assert.deepEqual(v, [], `while ${victim} is down:\n${v.join("\n")}`);
            await sleep(200);
          }
          const down = await nodesApi(stack).get(victim);
          assert.ok(isDisrupted(down), `${victim} keeps its disruption record while down`);
          stack.fleet.nodes.get(victim)!.holdDown = false;
          await waitPool(
            stack,
            pool,
            async () => {
              const n = await nodesApi(stack).get(victim);
              return !isDisrupted(n) && n.spec?.unschedulable !== true;
            },
            `${victim} is released and uncordoned once back`,
            LONG_MS,
          );
          const rest = nodes.filter((n) => n !== victim);
          await waitConverged(stack, pool, v2.digest, rest.length, LONG_MS);
          await assertScoped(stack, [pool], nodes);
        } finally {
          for (const n of nodes) {
            const m = stack.fleet.nodes.get(n);
            if (m) m.holdDown = false;
          }
        }
        await retire(stack, [pool], nodes);
      },
    );

    await scenario(
      t,
      "c: a retarget to the booted image while a node reboots keeps it counted until back",
      async () => {
        const pool = "retg";
        // retg-1 runs v1, the others v2: a rollout to v2 reboots retg-1 alone; the retarget
        // to v1 (retg-1's booted image) then needs the others.
        const [first] = await addNodes(stack, pool, 1);
        const names2 = Array.from({ length: 2 }, (_, i) => `${pool}-${i + 2}`);
        await Promise.all(
          names2.map((name) => stack.fleet.addNode(name, { image: ref2, labels: { pool } })),
        );
        const nodes = [first, ...names2];
        stack.fleet.nodes.get(first)!.holdDown = true;
        try {
          await stack.createPool(pool, poolSpec(pool, ref2, { maxUnavailable: 1 }));
          await waitPool(
            stack,
            pool,
            async () => {
              if (!stack.fleet.nodes.get(first)?.rebooting) return undefined;
              const bn = await bootcNodesApi(stack).get(first);
              return idleReason(bn) === "Rebooting";
            },
            `${first} is down, rebooting into v2`,
            LONG_MS,
          );
          await patchPoolSpec(stack, pool, { image: { ref: ref1 } });
          // The others stage v1 and want a slot; the old controller released retg-1's slot
          // and granted the next within a second.
          await waitNodes(
            stack,
            pool,
            (bns) =>
              bns.filter((bn) =>
                  names2.includes(bn.metadata.name ?? "") &&
                  bn.status?.staged?.imageDigest === v1.digest
                ).length === 2 || violationsOf(stack, [pool]).length > 0,
            "the others stage v1",
            LONG_MS,
          );
          const end = Date.now() + 6_000;
          while (Date.now() < end) {
            const v = violationsOf(stack, [pool]);
            assert.deepEqual(v, [], `while ${first} is down:\n${v.join("\n")}`);
            await sleep(200);
          }
          const held = await nodesByName(stack);
          assert.ok(
            names2.every((n) => !holdsRebootSlot(held.get(n) ?? {})),
            `no other node got a slot while ${first} is down`,
          );
          stack.fleet.nodes.get(first)!.holdDown = false;
          await waitConverged(stack, pool, v1.digest, 3, LONG_MS);
          await assertScoped(stack, [pool], nodes);
        } finally {
          stack.fleet.nodes.get(first)!.holdDown = false;
        }
        await retire(stack, [pool], nodes);
      },
    );

    await scenario(t, "e: a canary NotReady during a 20 s soak rolls the pool back", async () => {
      const pool = "cnr";
      const nodes = await addNodes(stack, pool, 3);
      await stack.createPool(
        pool,
        poolSpec(pool, ref1, {
          maxUnavailable: 1,
          onFailure: "RollbackPool",
          canary: { nodes: 1, soakSeconds: 20 },
          health: { timeoutSeconds: 60 },
        }),
      );
      await waitConverged(stack, pool, v1.digest, 3, LONG_MS);
      await patchPoolSpec(stack, pool, { image: { ref: ref2 } });
      const canary = await waitPool(
        stack,
        pool,
        async () => {
          const p = await getPool(stack, pool);
          if (p.status?.canary?.phase !== "Soaking") return undefined;
          const bns = await poolNodes(stack, pool);
          return bns.find((bn) => bn.status?.booted?.imageDigest === v2.digest)?.metadata.name;
        },
        "the canary soaks on v2",
        LONG_MS,
      );
      const others = nodes.filter((n) => n !== canary);
      await stack.cp.setNodeReady(canary, false);
      try {
        const outcome = await waitPool(
          stack,
          pool,
          async () => {
            const [p, bns, objs] = await Promise.all([
              getPool(stack, pool),
              poolNodes(stack, pool),
              nodesByName(stack),
            ]);
            const spread = bns.find((bn) =>
              others.includes(bn.metadata.name ?? "") &&
              (bn.status?.booted?.imageDigest === v2.digest ||
                holdsRebootSlot(objs.get(bn.metadata.name ?? "") ?? {}))
            );
            if (spread) {
              return `the rollout went on past the NotReady canary: ${spread.metadata.name} ` +
                `took a slot or booted v2 (canary ${p.status?.canary?.phase})`;
            }
            return p.status?.rollbackHold?.failedImage?.endsWith(v2.digest)
              ? "rolled back"
              : undefined;
          },
          "the NotReady canary fails its soak and the pool rolls back",
          90_000,
        );
        assert.equal(outcome, "rolled back", outcome);
      } finally {
        await stack.cp.setNodeReady(canary, true);
      }
      const p = await waitConverged(stack, pool, v1.digest, 3, LONG_MS);
      assert.equal(p.status?.history?.find((r) => r.digest === v2.digest)?.outcome, "RolledBack");
      const bns = await poolNodes(stack, pool);
      for (const bn of bns.filter((b) => others.includes(b.metadata.name ?? ""))) {
        assert.notEqual(bn.status?.rollback?.imageDigest, v2.digest, "only the canary ran v2");
      }
      await assertScoped(stack, [pool], nodes);
      await retire(stack, [pool], nodes);
    });

    await scenario(
      t,
      "f: a drain blocked by a PodDisruptionBudget is named within 30 s",
      async () => {
        const pool = "pdbf";
        const pdb = "no-evictions";
        const nodes = await addNodes(stack, pool, 2);
        await stack.createPool(
          pool,
          poolSpec(pool, ref1, { maxUnavailable: 1, drainTimeoutSeconds: 900 }),
        );
        await waitConverged(stack, pool, v1.digest, 2, LONG_MS);
        await stack.cp.createNamespace(pool);
        for (const n of nodes) {
          await stack.cp.createPod(pool, `pinned-${n}`, { nodeName: n, labels: { app: "pinned" } });
        }
        await stack.cp.createPdb(pool, pdb, { selector: { app: "pinned" }, minAvailable: 2 });
        await patchPoolSpec(stack, pool, { image: { ref: ref2 } });
        const holder = await waitPool(
          stack,
          pool,
          async () => {
            const objs = await nodesByName(stack);
            return nodes.find((n) => holdsRebootSlot(objs.get(n) ?? {}));
          },
          "a node takes its slot and starts draining",
          LONG_MS,
        );
        const named = (text: string) => text.includes(pdb);
        await waitPool(
          stack,
          pool,
          async () => {
            const [bn, p] = await Promise.all([
              bootcNodesApi(stack).get(holder),
              getPool(stack, pool),
            ]);
            return named(conditionText(bn.status?.conditions)) &&
              named(conditionText(p.status?.conditions));
          },
          `the PodDisruptionBudget ${pdb} is named in ${holder}'s conditions and the pool's`,
          30_000,
        );
        await stack.cp.client.resource(Resources.poddisruptionbudgets, pool).delete(pdb);
        await waitConverged(stack, pool, v2.digest, 2, LONG_MS);
        await assertScoped(stack, [pool], nodes);
        await retire(stack, [pool], nodes);
      },
    );

    await scenario(
      t,
      "g: `kubectl bootc why` on a node that failed verification says so",
      async () => {
        const pool = "whyf";
        const nodes = await addNodes(stack, pool, 2);
        await stack.createPool(
          pool,
          poolSpec(pool, ref1, {
            maxUnavailable: 1,
            onFailure: "Halt",
            health: { timeoutSeconds: 60 },
          }),
        );
        await waitConverged(stack, pool, v1.digest, 2, LONG_MS);
        const bad = await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "whyf-bad",
          version: "bad-whyf",
          labels: { [BAD_BOOT_LABEL]: "unit-fails" },
        });
        await patchPoolSpec(stack, pool, { image: { ref: pinned(stack, bad.digest) } });
        const failed = await waitPool(
          stack,
          pool,
          async () => {
            const bns = await poolNodes(stack, pool);
            return bns.find((bn) =>
              bn.status?.booted?.imageDigest === bad.digest &&
              findCondition(bn.status?.conditions, "Verified")?.status === "False"
            )?.metadata.name;
          },
          "a node boots the bad image and fails its checks",
          LONG_MS,
        );
        const why = await waitFor(async () => {
          const out = await kubectlBootc(stack, ["why", failed]);
          const headline = out.split("\n")[0];
          return /fail/i.test(headline) ? out : undefined;
        }, {
          timeoutMs: 30_000,
          intervalMs: 2_000,
          message: `\`why ${failed}\` says it failed verification`,
        }).catch(async (e) => {
          const out = await kubectlBootc(stack, ["why", failed]).catch((x) => String(x));
          throw new Error(`${e instanceof Error ? e.message : e}\nwhy said:\n${out}`);
        });
        assert.doesNotMatch(why.split("\n")[0], /released once minReadySeconds|back on the target/);
        // A halted pool is a problem: `status` says so and exits 1 (for CI).
        const status = await kubectlBootc(stack, ["status", pool], [1]);
        assert.match(status, /[1-9]\d* failed/, `status counts the failed node:\n${status}`);
        await patchPoolSpec(stack, pool, { image: { ref: ref1 } });
        await waitConverged(stack, pool, v1.digest, 2, LONG_MS);
        await assertScoped(stack, [pool], nodes);
        await retire(stack, [pool], nodes);
      },
    );

    /** The pool's degraded count and whether its message calls nodes degraded. */
    const degradedSeen = (p: BootcNodePool): string | undefined => {
      const upToDate = findCondition(p.status?.conditions, "UpToDate")?.message ?? "";
      const degraded = findCondition(p.status?.conditions, "Degraded");
      if ((p.status?.degradedCount ?? 0) > 0 || /[1-9]\d* degraded/.test(upToDate)) {
        return `degradedCount ${p.status?.degradedCount}; UpToDate: ${upToDate}; ` +
          `Degraded=${degraded?.status}/${degraded?.reason}`;
      }
      return undefined;
    };

    await scenario(
      t,
      "h1: nodes held back by stageOutsideWindows: false are waiting, not degraded",
      async () => {
        const pool = "hwin";
        const nodes = await addNodes(stack, pool, 2);
        // A daily one-minute window twelve hours away: closed for the whole test.
        const hour = (new Date().getUTCHours() + 12) % 24;
        await stack.createPool(
          pool,
          poolSpec(pool, ref1, { maxUnavailable: 1 }, {
            maintenance: {
              windows: [{ schedule: `0 ${hour} * * *`, duration: "1m" }],
              stageOutsideWindows: false,
            },
          }),
        );
        await waitConverged(stack, pool, v1.digest, 2, LONG_MS);
        await patchPoolSpec(stack, pool, { image: { ref: ref2 } });
        await waitPool(
          stack,
          pool,
          async () => {
            const p = await getPool(stack, pool);
            return p.status?.targetDigest === v2.digest &&
              p.status.observedGeneration === p.metadata?.generation;
          },
          "the pool's status shows the new target",
          60_000,
        );
        const end = Date.now() + 4_000;
        while (Date.now() < end) {
          const [p, bns] = await Promise.all([getPool(stack, pool), poolNodes(stack, pool)]);
          assert.equal(degradedSeen(p), undefined, await describePool(stack, pool));
          assert.ok(
            bns.every((bn) => bn.spec.desiredImage.endsWith(v1.digest)),
            "the window holds the nodes back (the premise)",
          );
          await sleep(250);
        }
        await assertScoped(stack, [pool], nodes);
        await retire(stack, [pool], nodes);
      },
    );

    await scenario(t, "h2: nodes queued by maxStaging are waiting, not degraded", async () => {
      const pool = "hstg";
      const nodes = await addNodes(stack, pool, 4);
      await stack.createPool(pool, poolSpec(pool, ref1, { maxUnavailable: 1, maxStaging: 1 }));
      await waitConverged(stack, pool, v1.digest, 4, LONG_MS);
      await patchPoolSpec(stack, pool, { image: { ref: ref2 }, rollout: { paused: true } });
      let queuedSeen = 0;
      const verdict = await waitPool(
        stack,
        pool,
        async () => {
          const [p, bns] = await Promise.all([getPool(stack, pool), poolNodes(stack, pool)]);
          if (p.status?.targetDigest !== v2.digest) return undefined;
          const bad = degradedSeen(p);
          if (bad) return `queued nodes counted as degraded: ${bad}`;
          if (bns.some((bn) => !bn.spec.desiredImage.endsWith(v2.digest))) queuedSeen++;
          const done = bns.length === 4 &&
            bns.every((bn) =>
              bn.spec.desiredImage.endsWith(v2.digest) && idleReason(bn) === "Staged" &&
              bn.status?.staged?.imageDigest === v2.digest
            );
          return done ? "staged" : undefined;
        },
        "every node stages v2, one at a time",
        LONG_MS,
      );
      assert.equal(verdict, "staged", verdict);
      assert.ok(queuedSeen > 0, "the queue was observed (the premise)");
      await assertScoped(stack, [pool], nodes);
      await retire(stack, [pool], nodes);
    });

    await scenario(t, "i: nodes moved between pools stall no pool's planning", async () => {
      // Pool mvb owns mvb-1 (being drained, its pods held by a PodDisruptionBudget, so each
      // of mvb's reconciles spends a while evicting), mvb-2 and mvb-3. Those two then also
      // match pool mva (which leaves them to their owner), and lose mvb's label: mvb deletes
      // their BootcNodes and mva, idle, creates new ones under the same names while mvb's
      // reconcile is still busy. The old cache guard, waiting by name for the deleted
      // objects to be gone, then stopped every pool's planning for ~60 s.
      const moving = ["mvb-2", "mvb-3"];
      const selectA = { "bootc-test/mva": "yes" };
      await Promise.all([
        stack.fleet.addNode("mva-1", { image: ref2, labels: selectA }),
        stack.fleet.addNode("mvb-1", { image: ref1, labels: { pool: "mvb" }, pods: 30 }),
        ...moving.map((n) => stack.fleet.addNode(n, { image: ref2, labels: { pool: "mvb" } })),
      ]);
      const c = await addNodes(stack, "mvc", 3);
      const nodes = ["mva-1", "mvb-1", ...moving, ...c];
      await stack.createPool("mva", {
        ...poolSpec("mva", ref2, { maxUnavailable: 1 }),
        nodeSelector: { matchLabels: selectA },
      });
      await stack.createPool("mvc", poolSpec("mvc", ref1, { maxUnavailable: 1 }));
      await stack.cp.createPdb("default", "mvb-hold", {
        selector: { node: "mvb-1" },
        minAvailable: 30,
      });
      await stack.createPool("mvb", poolSpec("mvb", ref2, { maxUnavailable: 1 }));
      await waitConverged(stack, "mva", v2.digest, 1, LONG_MS);
      await waitConverged(stack, "mvc", v1.digest, 3, LONG_MS);
      await waitPool(
        stack,
        "mvb",
        async () => {
          const [objs, bns] = await Promise.all([nodesByName(stack), poolNodes(stack, "mvb")]);
          return bns.length === 3 && holdsRebootSlot(objs.get("mvb-1") ?? {});
        },
        "mvb-1 holds its slot, its drain blocked",
        LONG_MS,
      );
      const label = (key: string, value: string | null) =>
        Promise.all(
          moving.map((n) =>
            nodesApi(stack).patch(n, { metadata: { labels: { [key]: value } } }, {
              type: "merge",
            })
          ),
        );
      await label("bootc-test/mva", "yes");
      // Not needed for correctness: lets pool mva settle (it names the contested nodes).
      await waitFor(async () => {
        const p = await getPool(stack, "mva");
        return moving.every((n) => names(conditionText(p.status?.conditions), n));
      }, { timeoutMs: 15_000, message: "pool mva names the nodes it leaves to mvb" }).catch(
        () => {},
      );
      const uids = new Map(
        await Promise.all(
          moving.map(async (n) => [n, (await bootcNodesApi(stack).get(n)).metadata.uid] as const),
        ),
      );
      const stop = new AbortController();
      const sampling = sampleSlots(stack, "mvc", v2.digest, stop.signal);
      const t0 = Date.now();
      let timeline: SlotTimeline;
      try {
        await patchPoolSpec(stack, "mvc", { image: { ref: ref2 } });
        await label("pool", null);
        await waitPool(
          stack,
          "mva",
          async () => {
            const bns = await bootcNodesApi(stack).list();
            return moving.every((n) =>
              bns.items.some((bn) =>
                bn.metadata.name === n && bn.metadata.uid !== uids.get(n) &&
                bn.metadata.labels?.[LABEL_POOL] === "mva"
              )
            );
          },
          `pool mva adopts ${moving.join(", ")} with BootcNodes of its own`,
          30_000,
        );
        await waitConverged(stack, "mvc", v2.digest, 3, LONG_MS);
        await waitConverged(stack, "mva", v2.digest, 3, 60_000);
      } finally {
        stop.abort();
        timeline = await sampling;
      }
      await stack.cp.client.resource(Resources.poddisruptionbudgets, "default").delete("mvb-hold");
      await waitConverged(stack, "mvb", v2.digest, 1, LONG_MS);
      const grants = [...timeline.granted].sort((x, y) => x[1] - y[1]);
      const at = (ms: number | undefined) => ms === undefined ? "-" : `+${ms - t0} ms`;
      const report = grants.map(([n, g]) =>
        `${n}: granted ${at(g)}, back ${at(timeline.back.get(n))}, ` +
        `released ${at(timeline.released.get(n))}`
      ).join("\n");
      console.log(`mvc slot timeline (from its retarget, as the nodes move):\n${report}`);
      assert.equal(grants.length, 3, report);
      assert.ok(grants[0][1] - t0 < 20_000, `first grant within 20 s:\n${report}`);
      for (const [n] of grants) {
        const back = timeline.back.get(n);
        const released = timeline.released.get(n);
        if (back !== undefined && released !== undefined) {
          assert.ok(
            released - back < 15_000,
            `${n} released within 15 s of being back:\n${report}`,
          );
        }
      }
      for (let i = 1; i < grants.length; i++) {
        const prev = timeline.released.get(grants[i - 1][0]);
        if (prev === undefined) continue;
        assert.ok(
          grants[i][1] - prev < 15_000,
          `${grants[i][0]} granted within 15 s of ${grants[i - 1][0]}'s release:\n${report}`,
        );
      }
      const stalls: string[] = [];
      for await (const entry of Deno.readDir(stack.logDir)) {
        if (!entry.name.startsWith("controller-")) continue;
        const text = await Deno.readTextFile(`${stack.logDir}/${entry.name}`);
        stalls.push(
          ...text.split("\n").filter((l) =>
            /did not catch up/.test(l) && moving.some((n) => l.includes(n))
          ),
        );
      }
      assert.deepEqual(stalls, [], "the cache guard never stalled on a moved node");
      await assertScoped(stack, ["mva", "mvb", "mvc"], nodes);
      await retire(stack, ["mva", "mvb", "mvc"], nodes);
    });
  } finally {
    await stopStack(stack);
  }
});
