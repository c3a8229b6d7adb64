/**
 * End-to-end hooks (issue 26, part 2) with the real controller and daemons: a
 * local receiver (HTTP and HTTPS) records every CloudEvent the controller
 * POSTs. One stack, one pool per scenario:
 *
 * - admission refuses bad hook specs with readable messages;
 * - a 2-node rollout delivers each node's phases in order (pre-drain, then
 *   pre-reboot, then post-verification) between the rollout's start and
 *   completion; a hook failing twice is retried to success; a hook whose first
 *   answer times out is retried; a hook that always fails, one that refuses
 *   (4xx) and one whose TLS is not trusted block nothing and are recorded as
 *   Failed in `status.hooks` with a Warning event; a bearer token from a
 *   Secret and TLS with a CA bundle reach the receiver, a Secret without the
 *   opt-in label is never sent;
 * - a bad image: the rollout's halt (onFailure: Halt) and its rollback
 *   (onFailure: RollbackPool) are delivered.
 */
import assert from "node:assert/strict";
import type { IEvent as CoreEvent } from "kubernetes-models/v1/Event";
import type { ISecret } from "kubernetes-models/v1/Secret";
import {
  type BootcNodePool,
  type HookDeliveryStatus,
  LABEL_WEBHOOK_CREDENTIALS,
} from "../../lib/api/mod.ts";
import { isInvalid, Resources } from "../../lib/kube/mod.ts";
import { BAD_BOOT_LABEL } from "../bootc_sim/bad_boot.ts";
import { type ReceivedCall, startHookReceiver, testServerTls } from "../harness/hook_receiver.ts";
import { OPERATOR_NAMESPACE, startStack } from "../harness/stack.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitPool,
} from "./scenario.ts";

const LONG_MS = 240_000;
const TOKEN = "hook-token-e2e-0123456789";

interface Event {
  id: string;
  type: string;
  subject: string;
  specversion: string;
  source: string;
  data: {
    pool: string;
    node?: string;
    phase: string;
    revision: number;
    images: { target: { image?: string; digest?: string } };
  };
}

const ev = (c: ReceivedCall) => c.json as Event;

Deno.test("hooks: phases in order, retries, timeouts, failures recorded, token and TLS", async (t) => {
  const tls = await testServerTls();
  const respond = (c: ReceivedCall) => {
    const hook = c.path.split("/")[1];
    if (hook === "flaky") return c.attempt <= 2 ? { status: 503, body: "busy" } : {};
    if (hook === "slow") return c.attempt === 1 ? { delayMs: 4_000 } : {};
    if (hook === "down") return { status: 500, body: "down for maintenance" };
    if (hook === "refuse") return { status: 403, body: "not on my watch" };
    return {};
  };
  const attemptKey = (c: { path: string; json?: unknown }) =>
    `${c.path} ${(c.json as { id?: string } | undefined)?.id}`;
  const http = startHookReceiver({ responder: respond, attemptKey });
  const https = startHookReceiver({ responder: respond, attemptKey, tls });
  const stack = await startStack({
    limits: {
      hk: { maxUnavailable: 1 },
      "hk-back": { maxUnavailable: 1 },
      "hk-halt": { maxUnavailable: 1 },
    },
  });
  const pools = stack.cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
  const { v2, repository } = stack.images;
  const good = `${repository}@${v2.digest}`;
  const badImage = async (tag: string) => {
    const pushed = await stack.registry.pushImage({
      repository: "bootc/os",
      tag,
      version: `bad-${tag}`,
      labels: { [BAD_BOOT_LABEL]: "unit-fails" },
    });
    return { digest: pushed.digest, image: `${repository}@${pushed.digest}` };
  };
  const statusOf = async (pool: string) =>
    new Map(((await getPool(stack, pool)).status?.hooks ?? []).map((h) => [h.name, h]));
  const phasesAt = (path: string) =>
    http.received((c) => c.path === path).map((c) => ev(c).data.phase);
  try {
    await step(t, "admission refuses bad hooks with readable messages", async () => {
      const bad = async (hook: Record<string, unknown>, pattern: RegExp) => {
        const error = await pools.create({
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNodePool",
          metadata: { name: "hk-invalid" },
          spec: { nodeSelector: {}, image: { ref: good }, hooks: [hook] },
        } as unknown as BootcNodePool).then(() => undefined, (e) => e);
        if (!error) await pools.delete("hk-invalid");
        assert.ok(error, `expected ${pattern}, but the pool was accepted`);
        assert.ok(isInvalid(error), String(error));
        assert.match(String(error.message), pattern);
      };
      await bad(
        { name: "a", url: "ftp://example.com/x" },
        /must be an absolute http:\/\/ or https:\/\/ URL/,
      );
      await bad({ name: "a", url: "https://user:pw@example.com/" }, /no credentials/);
      await bad({ name: "a", url: "https://x", caBundle: "not pem" }, /must be PEM/);
      await bad(
        { name: "a", url: "https://x", phases: ["Sometimes"] },
        /Unsupported value: "Sometimes"/,
      );
      await bad({ name: "a", url: "https://x", timeoutSeconds: 0 }, /timeoutSeconds/);
      await bad({ name: "Bad_Name", url: "https://x" }, /must be at most 63 lowercase letters/);
      await bad({ name: "a", url: "https://x", secretRef: { name: "UPPER" } }, /valid Secret name/);
      await bad(
        { name: "a", url: "http://x", secretRef: { name: "s" } },
        /needs an https:\/\/ url/,
      );
    });

    await step(
      t,
      "a rollout delivers every phase in order; failures are recorded, nothing blocks",
      async () => {
        const secrets = stack.cp.client.resource<ISecret & { metadata: { name: string } }>(
          Resources.secrets,
          OPERATOR_NAMESPACE,
        );
        // Opted in by its label; the same token without the label is never sent.
        for (
          const [name, labels] of [["hook-token", { [LABEL_WEBHOOK_CREDENTIALS]: "true" }], [
            "not-for-hooks",
            {},
          ]] as const
        ) {
          await secrets.create({
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name, namespace: OPERATOR_NAMESPACE, labels },
            type: "Opaque",
            stringData: { token: TOKEN },
          });
        }
        const nodes = await addNodes(stack, "hk", 2);
        const pool = [
          // Credentials go over TLS only (admission refuses a secretRef with http://).
          {
            name: "all",
            url: `${https.url}/all`,
            caBundle: tls.ca,
            secretRef: { name: "hook-token" },
          },
          { name: "flaky", url: `${http.url}/flaky` },
          { name: "slow", url: `${http.url}/slow`, timeoutSeconds: 1 },
          {
            name: "down",
            url: `${http.url}/down`,
            maxAttempts: 2,
            phases: ["RolloutStarted", "NodePreDrain", "RolloutCompleted"],
          },
          { name: "refuse", url: `${http.url}/refuse`, phases: ["RolloutStarted"] },
          { name: "tls", url: `${https.url}/tls`, caBundle: tls.ca },
          {
            name: "untrusted",
            url: `${https.url}/untrusted`,
            maxAttempts: 1,
            phases: ["RolloutStarted"],
          },
          {
            name: "nolabel",
            url: `${https.url}/nolabel`,
            caBundle: tls.ca,
            maxAttempts: 1,
            phases: ["RolloutStarted"],
            secretRef: { name: "not-for-hooks" },
          },
        ];
        await stack.createPool("hk", { ...poolSpec("hk", good), hooks: pool } as never);
        await waitConverged(stack, "hk", v2.digest, 2, LONG_MS);
        // The rollout finished whatever the failing hooks did; now their records settle.
        const want: Record<string, [string, string, number]> = {
          all: ["RolloutCompleted", "Delivered", 1],
          flaky: ["RolloutCompleted", "Delivered", 3],
          slow: ["RolloutCompleted", "Delivered", 2],
          down: ["RolloutCompleted", "Failed", 2],
          refuse: ["RolloutStarted", "Failed", 1],
          tls: ["RolloutCompleted", "Delivered", 1],
          untrusted: ["RolloutStarted", "Failed", 1],
          nolabel: ["RolloutStarted", "Failed", 1],
        };
        const recorded = await waitPool(
          stack,
          "hk",
          async () => {
            const s = await statusOf("hk");
            return Object.entries(want).every(([name, [phase, result]]) =>
              s.get(name)?.phase === phase && s.get(name)?.result === result
            ) && s;
          },
          "status.hooks records each hook's last delivery",
          180_000,
        );
        for (const [name, [, , attempts]] of Object.entries(want)) {
          assert.equal(
            recorded.get(name)?.attempts,
            attempts,
            `${name}: ${JSON.stringify(recorded.get(name))}`,
          );
        }
        const rec = (name: string) => recorded.get(name) as HookDeliveryStatus;
        assert.match(rec("refuse").message ?? "", /refused: HTTP 403: not on my watch/);
        assert.match(rec("down").message ?? "", /HTTP 500: down for maintenance/);
        assert.match(rec("untrusted").message ?? "", /certificate|UnknownIssuer|invalid peer/i);
        assert.match(rec("nolabel").message ?? "", /not-for-hooks lacks the label/);
        assert.equal(https.received((c) => c.path === "/nolabel").length, 0);
        assert.equal(rec("all").revision, 1);

        // Order: the rollout's start, each node's three phases in order, the completion.
        const calls = https.received((c) => c.path === "/all");
        const ids = calls.map((c) => ev(c).id);
        assert.equal(new Set(ids).size, ids.length, `no event twice: ${ids.join(", ")}`);
        const phases = calls.map((c) => ev(c).data.phase);
        assert.equal(phases[0], "RolloutStarted", phases.join(", "));
        assert.equal(phases.at(-1), "RolloutCompleted", phases.join(", "));
        for (const node of nodes) {
          const mine = calls.filter((c) => ev(c).data.node === node).map((c) => ev(c).data.phase);
          assert.deepEqual(mine, ["NodePreDrain", "NodePreReboot", "NodePostVerification"], node);
        }
        // maxUnavailable 1: a receiver replaying the stream never sees two nodes in flight.
        const inFlight = new Set<string>();
        for (const c of calls) {
          const { phase, node = "" } = ev(c).data;
          if (phase === "NodePreDrain") inFlight.add(node);
          if (phase === "NodePostVerification") inFlight.delete(node);
          assert.ok(inFlight.size <= 1, `two nodes in flight: ${phases.join(", ")}`);
        }
        for (const c of calls) {
          const e = ev(c);
          assert.equal(c.headers["content-type"], "application/cloudevents+json");
          assert.equal(c.headers.authorization, `Bearer ${TOKEN}`);
          assert.ok(!c.body.includes(TOKEN), "the body carries no secret");
          assert.equal(e.specversion, "1.0");
          assert.equal(e.source, "/apis/node.bootc.dev/v1alpha1/bootcnodepools/hk");
          assert.equal(e.data.pool, "hk");
          assert.equal(e.data.revision, 1);
          assert.equal(e.data.images.target.digest, v2.digest);
          assert.match(e.type, /^dev\.bootc\.(node|pool)\.[a-zA-Z]+$/);
          assert.equal(e.subject, e.data.node ? `nodes/${e.data.node}` : "bootcnodepools/hk");
        }
        // Retries: every flaky event three times under one id; every slow event timed out once.
        const flaky = Map.groupBy(http.received((c) => c.path === "/flaky"), (c) => ev(c).id);
        assert.equal(flaky.size, calls.length);
        for (const [id, tries] of flaky) {
          assert.deepEqual(tries.map((c) => c.attempt), [1, 2, 3], id);
        }
        const slow = Map.groupBy(
          http.received((c) => c.path === "/slow"),
          (c) => ev(c).id,
        );
        assert.equal(slow.size, calls.length);
        for (const [id, tries] of slow) {
          assert.equal(tries.length, 2, id);
          assert.ok(
            tries[1].at.getTime() - tries[0].at.getTime() >= 900,
            `${id}: retried after the timeout`,
          );
        }
        assert.deepEqual(phasesAt("/down").filter((p) => p === "RolloutCompleted").length, 2);
        // TLS: verified against the CA bundle; without it, nothing got through.
        assert.deepEqual(
          https.received((c) => c.path === "/tls").map((c) => ev(c).data.phase),
          phases,
        );
        assert.equal(https.received((c) => c.path === "/untrusted").length, 0);
        // A Warning on the pool for each delivery that finally failed.
        const events = (await stack.cp.client.resource<CoreEvent>(Resources.events).list()).items
          .filter((e) => e.involvedObject?.name === "hk" && e.reason === "HookDeliveryFailed");
        for (const hook of ["down", "refuse", "untrusted", "nolabel"]) {
          assert.ok(
            events.some((e) => e.type === "Warning" && e.message?.startsWith(`hook ${hook}:`)),
            `a HookDeliveryFailed Warning for ${hook}: ${events.map((e) => e.message).join(" | ")}`,
          );
        }
        await assertInvariants(stack, nodes);
      },
    );

    await step(t, "a bad image: the halt and the rollback are delivered", async () => {
      const back = await addNodes(stack, "hk-back", 2, { image: good });
      const halt = await addNodes(stack, "hk-halt", 1, { image: good });
      const rollout = (onFailure: string) => ({
        maxUnavailable: 1,
        onFailure,
        rebootTimeoutSeconds: 45,
        health: { timeoutSeconds: 45 },
      });
      const hooks = (path: string) => [{ name: "ops", url: `${http.url}${path}` }];
      await stack.createPool(
        "hk-back",
        { ...poolSpec("hk-back", good, rollout("RollbackPool")), hooks: hooks("/back") } as never,
      );
      await stack.createPool(
        "hk-halt",
        { ...poolSpec("hk-halt", good, rollout("Halt")), hooks: hooks("/halt") } as never,
      );
      await waitConverged(stack, "hk-back", v2.digest, 2, LONG_MS);
      await waitConverged(stack, "hk-halt", v2.digest, 1, LONG_MS);
      const b = await badImage("hooks-bad");
      await patchPoolSpec(stack, "hk-back", { image: { ref: b.image } });
      await patchPoolSpec(stack, "hk-halt", { image: { ref: b.image } });
      const waitPhases = (path: string, pool: string, wanted: string[]) =>
        waitPool(
          stack,
          pool,
          () => {
            const seen = phasesAt(path).filter((p) => p.startsWith("Rollout"));
            return Promise.resolve(wanted.every((w) => seen.includes(w)) && seen);
          },
          `${path}: ${wanted.join(", ")}`,
          LONG_MS,
        );
      const haltSeen = await waitPhases("/halt", "hk-halt", ["RolloutHalted"]);
      const backSeen = await waitPhases("/back", "hk-back", ["RolloutRolledBack"]);
      await waitConverged(stack, "hk-back", v2.digest, 2, LONG_MS);
      const backPool = http.received((c) =>
        c.path === "/back" && ev(c).data.phase.startsWith("Rollout")
      )
        .map((c) => `${ev(c).data.phase}#${ev(c).data.revision}`);
      // Revision 1 (good) started and completed; 2 (bad) started and rolled back; 3 (back to good).
      assert.deepEqual(backPool.slice(0, 4), [
        "RolloutStarted#1",
        "RolloutCompleted#1",
        "RolloutStarted#2",
        "RolloutRolledBack#2",
      ], backSeen.join(", "));
      assert.ok(backPool.includes("RolloutStarted#3"), backPool.join(", "));
      const halted = http.received((c) =>
        c.path === "/halt" && ev(c).data.phase === "RolloutHalted"
      );
      assert.equal(halted.length, 1, haltSeen.join(", "));
      assert.equal(ev(halted[0]).data.revision, 2);
      assert.equal(ev(halted[0]).data.images.target.digest, b.digest);
      // The halted pool goes back to the good image by hand.
      await patchPoolSpec(stack, "hk-halt", { image: { ref: good } });
      await waitConverged(stack, "hk-halt", v2.digest, 1, LONG_MS);
      await assertInvariants(stack, [...back, ...halt]);
    });
  } finally {
    await stopStack(stack);
    await http.close();
    await https.close();
  }
});
