/**
 * End-to-end checks of issue 23's "status fields made for people", with the real
 * kube-apiserver, kubectl, controller and daemons, on the demo's fleet (six nodes
 * `worker-1`…`worker-6`, pool `workers` on `<registry>/bootc/os:stable`):
 *
 * - every row of the default `kubectl get bnp` and `kubectl get bn` is at most
 *   120 columns, converged and all through a rollout (sampled until it
 *   converges), while `-o wide` still carries the full digests;
 * - the default columns name the target by tag, version and a 12-hex digest,
 *   and each node's state (the one classification) and version;
 * - once released, no node's Cordoned or Drained condition still says True;
 * - node counts (`NODES`, `UPDATED`) and the pool's health (`UPTODATE`,
 *   `DEGRADED`: its conditions) are separate columns, the degraded count in
 *   `-o wide` (`DEGRADEDNODES`);
 * - a typo'd tag shows `UPTODATE False`, `DEGRADED True` and `STATE
 *   ImageResolutionFailed`, and an invalid spec whose image changed shows
 *   `False` / `InvalidSpec` with the old target kept, in the default columns;
 * - a pool that starts waiting on a gate (paused) says so in STATE and in a
 *   `Waiting` event naming it, and a `WaitingCleared` event when it stops;
 * - a new pool whose selector overlaps the pool's nodes is `UPTODATE False`,
 *   `DEGRADED True`, `STATE NodeConflict` with no RolloutComplete event, and
 *   the pool that runs the nodes stays `DEGRADED False`;
 * - a node failing its health checks under `onFailure: Halt` shows `STATE
 *   Failed` with the check in `DETAIL`, and the pool `STATE Halted` with
 *   UpToDate's reason `RolloutHalted`.
 *
 * Every wait is on a condition (never sleep-and-assert), with generous bounds
 * for a loaded 2-core machine.
 */
import assert from "node:assert/strict";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import { findCondition } from "../../lib/api/mod.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { BAD_BOOT_LABEL } from "../bootc_sim/bad_boot.ts";
import { type Stack, startStack } from "../harness/stack.ts";
import { waitFor } from "../harness/wait.ts";
import {
  getPool,
  patchPoolSpec,
  poolNodes,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

const POOL = "workers";
const WORKER_LABEL = "node-role.kubernetes.io/worker";
const NODES = Array.from({ length: 6 }, (_, i) => `worker-${i + 1}`);
const MAX_COLUMNS = 120;
const LONG_MS = 180_000;

/** A `kubectl get` table: its lines and its rows as header → value. */
interface Table {
  lines: string[];
  rows: Record<string, string>[];
}

/** Runs `kubectl get …` and splits its table (columns are at least 3 spaces apart). */
async function kubectlGet(stack: Stack, args: string[]): Promise<Table> {
  const res = await stack.cp.kubectl(["get", ...args]);
  assert.equal(res.code, 0, res.stderr);
  const lines = res.stdout.split("\n").filter((l) => l.length > 0);
  const header = lines[0] ?? "";
  // Column starts from the header (a header name never contains a space).
  const starts = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index! }));
  const rows = lines.slice(1).map((line) => {
    const row: Record<string, string> = {};
    starts.forEach((c, i) => {
      row[c.name] = line.slice(c.at, starts[i + 1]?.at ?? line.length).trim();
    });
    return row;
  });
  return { lines, rows };
}

/** The messages of the pool's events with `reason` (Events live in `default`). */
async function poolEvents(stack: Stack, reason: string, pool = POOL): Promise<string[]> {
  const list = await stack.cp.client.resource<CoreEvent>(Resources.events, "default").list({
    fieldSelector: `involvedObject.name=${pool},reason=${reason}`,
  });
  return list.items.map((e) => e.message ?? "");
}

/** The widest line of `table`. */
function widest(table: Table): number {
  return Math.max(...table.lines.map((l) => l.length));
}

/**
 * Tables seen wider than {@linkcode MAX_COLUMNS}. Probes only record them (a probe
 * that throws counts as "not yet" for `waitFor`); each step asserts there are none.
 */
const tooWide: string[] = [];

/** Records `table` if a line is wider than {@linkcode MAX_COLUMNS}; returns the widest. */
function checkFits(table: Table, what: string): number {
  const w = widest(table);
  if (w > MAX_COLUMNS) tooWide.push(`${what}: ${w} columns\n${table.lines.join("\n")}`);
  return w;
}

Deno.test("kubectl get: default rows of the 6-node demo fit 120 columns; problems lead", async (t) => {
  const stack = await startStack({ limits: { [POOL]: { maxUnavailable: 2 } } });
  const { repository, v1, v2 } = stack.images;
  const widths = { bnp: 0, bn: 0 };
  const states = new Set<string>();
  const measure = async () => {
    const [bnp, bn] = await Promise.all([
      kubectlGet(stack, ["bnp"]),
      kubectlGet(stack, ["bn"]),
    ]);
    widths.bnp = Math.max(widths.bnp, checkFits(bnp, "kubectl get bnp"));
    widths.bn = Math.max(widths.bn, checkFits(bn, "kubectl get bn"));
    for (const r of bn.rows) if (r.STATE) states.add(r.STATE);
    for (const r of bnp.rows) if (r.STATE) states.add(`pool:${r.STATE}`);
    return { bnp, bn };
  };
  try {
    await stack.registry.tagExisting("bootc/os", "v1", "stable");
    await Promise.all(NODES.map((name) =>
      stack.fleet.addNode(name, {
        image: `${repository}:stable`,
        labels: { [WORKER_LABEL]: "" },
      })
    ));
    await stack.createPool(POOL, {
      nodeSelector: { matchLabels: { [WORKER_LABEL]: "" } },
      image: { ref: `${repository}:stable` },
      rollout: { maxUnavailable: 2 } as never,
    });

    await step(t, "converged on v1: short target, node states and versions", async () => {
      await waitConverged(stack, POOL, v1.digest, NODES.length, LONG_MS);
      const short = `stable (1.0) ${v1.digest.slice(7, 19)}`;
      const seen = await waitFor(async () => {
        const m = await measure();
        const pool = m.bnp.rows.find((r) => r.NAME === POOL);
        const updated = m.bn.rows.filter((r) => NODES.includes(r.NAME) && r.STATE === "Updated");
        return pool?.TARGET === short && updated.length === NODES.length ? m : undefined;
      }, { timeoutMs: 60_000, intervalMs: 500, message: "columns show the converged pool" });
      const pool = seen.bnp.rows.find((r) => r.NAME === POOL)!;
      assert.deepEqual([pool.UPTODATE, pool.DEGRADED, pool.STATE, pool.NODES, pool.UPDATED], [
        "True",
        "False",
        "AllUpdated",
        "6",
        "6",
      ]);
      for (const r of seen.bn.rows.filter((r) => NODES.includes(r.NAME))) {
        assert.deepEqual([r.POOL, r.STATE, r.VERSION], [POOL, "Updated", "1.0"], r.NAME);
        assert.equal(r.TARGET, `stable ${v1.digest.slice(7, 19)}`, r.NAME);
      }
      // -o wide and -o yaml keep the full references.
      const wide = await kubectlGet(stack, ["bnp", POOL, "-o", "wide"]);
      assert.equal(wide.rows[0].TARGETDIGEST, v1.digest);
      assert.deepEqual([wide.rows[0].DEGRADEDNODES, wide.rows[0].HEALTH], ["0", "Healthy"]);
      const bnWide = await kubectlGet(stack, ["bn", NODES[0], "-o", "wide"]);
      assert.equal(bnWide.rows[0].BOOTED, v1.digest);
      assert.equal(bnWide.rows[0].DESIRED, `${repository}@${v1.digest}`);
      const yaml = await stack.cp.kubectl(["get", "bnp", POOL, "-o", "yaml"]);
      assert.match(yaml.stdout, new RegExp(`targetImage: ${repository}@${v1.digest}`));
      assert.deepEqual(tooWide, []);
    });

    await step(t, "through a rollout to v2 every sampled row fits", async () => {
      await stack.registry.tagExisting("bootc/os", "v2", "stable");
      await waitPool(
        stack,
        POOL,
        async () => {
          const m = await measure();
          const pool = m.bnp.rows.find((r) => r.NAME === POOL);
          const p = await getPool(stack, POOL);
          const done = p.status?.targetDigest === v2.digest && pool?.STATE === "AllUpdated" &&
            pool.TARGET === `stable (2.0) ${v2.digest.slice(7, 19)}`;
          return done ? m : undefined;
        },
        "the rollout to v2 shows in the columns",
        LONG_MS,
      );
      await waitConverged(stack, POOL, v2.digest, NODES.length, LONG_MS);
      assert.ok(states.has("Rebooting") || states.has("Draining"), [...states].join(","));
      // Released and uncordoned: no condition still says cordoned in a slot or drained.
      await waitFor(async () => {
        const held = (await poolNodes(stack, POOL)).flatMap((bn) =>
          ["Cordoned", "Drained"].filter((type) =>
            findCondition(bn.status?.conditions, type)?.status === "True"
          ).map((type) => `${bn.metadata.name} ${type}`)
        );
        return held.length === 0 || undefined;
      }, { timeoutMs: 30_000, message: "Cordoned and Drained end with the slot" });
      assert.deepEqual(tooWide, []);
    });

    await step(t, "a typo'd tag: UPTODATE False, STATE ImageResolutionFailed", async () => {
      await patchPoolSpec(stack, POOL, { image: { ref: `${repository}:nosuch` } });
      const row = await waitPool(
        stack,
        POOL,
        async () => {
          const bnp = await kubectlGet(stack, ["bnp", POOL]);
          widths.bnp = Math.max(widths.bnp, checkFits(bnp, "kubectl get bnp (typo)"));
          const r = bnp.rows[0];
          return r?.STATE === "ImageResolutionFailed" ? r : undefined;
        },
        "STATE ImageResolutionFailed",
        60_000,
      );
      // The pool's health, not a count of nodes: Degraded=True beside its reason.
      assert.deepEqual([row.UPTODATE, row.DEGRADED], ["False", "True"]);
      assert.deepEqual(tooWide, []);
    });

    await step(
      t,
      "an invalid spec whose image changed: UPTODATE False, InvalidSpec, old target",
      async () => {
        await patchPoolSpec(stack, POOL, {
          image: { ref: `${repository}:v1` },
          rollout: { after: ["nope"] },
        });
        const row = await waitPool(
          stack,
          POOL,
          async () => {
            const bnp = await kubectlGet(stack, ["bnp", POOL]);
            widths.bnp = Math.max(widths.bnp, checkFits(bnp, "kubectl get bnp (invalid)"));
            const r = bnp.rows[0];
            return r?.STATE === "InvalidSpec" ? r : undefined;
          },
          "STATE InvalidSpec",
          60_000,
        );
        assert.equal(row.UPTODATE, "False");
        assert.equal((await getPool(stack, POOL)).status?.targetDigest, v2.digest, "old target");
        assert.ok(row.TARGET.endsWith(v2.digest.slice(7, 19)), row.TARGET);
        assert.deepEqual(tooWide, []);
      },
    );
    await step(
      t,
      "a gate: STATE names it, and an event marks the start and end of the wait",
      async () => {
        await patchPoolSpec(stack, POOL, {
          image: { ref: `${repository}:v1` },
          rollout: { after: [], paused: true },
        });
        const row = await waitPool(
          stack,
          POOL,
          async () => {
            const bnp = await kubectlGet(stack, ["bnp", POOL]);
            widths.bnp = Math.max(widths.bnp, checkFits(bnp, "kubectl get bnp (paused)"));
            return bnp.rows[0]?.STATE === "Paused" ? bnp.rows[0] : undefined;
          },
          "STATE Paused",
          LONG_MS,
        );
        assert.equal(row.UPTODATE, "False");
        const started = await waitFor(
          async () => (await poolEvents(stack, "Waiting")).find((m) => m.includes("Paused")),
          { timeoutMs: 30_000, message: "a Waiting event naming the gate" },
        );
        assert.match(started, /^waiting on Paused: no new reboot slots while paused/);
        await patchPoolSpec(stack, POOL, { rollout: { paused: false } });
        const ended = await waitFor(
          async () => (await poolEvents(stack, "WaitingCleared"))[0],
          { timeoutMs: 60_000, message: "a WaitingCleared event" },
        );
        assert.match(ended, /^no longer waiting on Paused/);
        assert.deepEqual(tooWide, []);
      },
    );
    await step(
      t,
      "a pool overlapping the nodes: it reports the conflict, the owner stays healthy",
      async () => {
        await waitConverged(stack, POOL, v1.digest, NODES.length, LONG_MS);
        await stack.createPool("extra", {
          nodeSelector: { matchLabels: { [WORKER_LABEL]: "" } },
          image: { ref: `${repository}:v1` },
        });
        const rows = await waitPool(
          stack,
          "extra",
          async () => {
            const bnp = await kubectlGet(stack, ["bnp"]);
            widths.bnp = Math.max(widths.bnp, checkFits(bnp, "kubectl get bnp (conflict)"));
            const extra = bnp.rows.find((r) => r.NAME === "extra");
            return extra?.STATE === "NodeConflict" ? bnp.rows : undefined;
          },
          "STATE NodeConflict on the new pool",
          60_000,
        );
        const extra = rows.find((r) => r.NAME === "extra")!;
        const owner = rows.find((r) => r.NAME === POOL)!;
        assert.deepEqual([extra.UPTODATE, extra.DEGRADED, extra.NODES], ["False", "True", "0"]);
        assert.deepEqual([owner.UPTODATE, owner.DEGRADED, owner.STATE], [
          "True",
          "False",
          "AllUpdated",
        ]);
        assert.deepEqual(await poolEvents(stack, "RolloutComplete", "extra"), []);
        await stack.cp.client.resource(Resources.bootcNodePools).delete("extra");
        await waitFor(async () => {
          const bnp = await kubectlGet(stack, ["bnp"]);
          return !bnp.rows.some((r) => r.NAME === "extra");
        }, { timeoutMs: 60_000, message: "pool extra deleted" });
        assert.deepEqual(tooWide, []);
      },
    );

    await step(
      t,
      "a failed health check under Halt: STATE Failed with its check, the pool Halted",
      async () => {
        await stack.registry.pushImage({
          repository: "bootc/os",
          tag: "bad",
          version: "bad",
          labels: { [BAD_BOOT_LABEL]: "unit-fails" },
        });
        await patchPoolSpec(stack, POOL, {
          image: { ref: `${repository}:bad` },
          rollout: { onFailure: "Halt" },
        });
        const seen = await waitPool(
          stack,
          POOL,
          async () => {
            const m = await measure();
            const failed = m.bn.rows.find((r) => r.STATE === "Failed");
            const pool = m.bnp.rows.find((r) => r.NAME === POOL);
            return failed && pool?.STATE === "Halted" ? { failed, pool } : undefined;
          },
          "a Failed node and a Halted pool in the default columns",
          LONG_MS,
        );
        assert.equal(seen.failed.DETAIL, "HostHealthy");
        assert.ok(seen.failed.TARGET.startsWith("bad "), seen.failed.TARGET);
        assert.deepEqual([seen.pool.UPTODATE, seen.pool.DEGRADED], ["False", "True"]);
        const wide = await kubectlGet(stack, ["bnp", POOL, "-o", "wide"]);
        assert.equal(wide.rows[0].REASON, "RolloutHalted");
        // One failed check says HealthCheckFailed; both slots' nodes failing (two unhealthy
        // slots) rank as RolloutHalted: either is the pool's health under this halt.
        assert.ok(
          ["HealthCheckFailed", "RolloutHalted"].includes(wide.rows[0].HEALTH),
          wide.rows[0].HEALTH,
        );
        assert.deepEqual(tooWide, []);
      },
    );
    console.log(
      `widest default rows: kubectl get bnp ${widths.bnp}, kubectl get bn ${widths.bn} ` +
        `columns; node states seen: ${[...states].sort().join(", ")}`,
    );
  } finally {
    await stopStack(stack);
  }
});
