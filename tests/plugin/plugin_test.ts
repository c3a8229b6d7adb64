/**
 * The `kubectl bootc` plugin for real: the built `kubectl-bootc` executable,
 * found by the real kubectl on PATH, against the real controller, daemons and
 * control plane during a rollout. `status --watch` runs in a real terminal
 * (tmux: a 160×50 pane whose screen `capture-pane` reads) and, at the same
 * time, with its output piped (plain lines). The rollout is driven through
 * states that hold still until the test moves on (paused; a drain blocked by a
 * PodDisruptionBudget; a budget of 0), so every screen check waits for a state
 * that cannot slip past: no assertion depends on catching a moment.
 *
 * The kubeconfig is given the way kubectl users give it: a KUBECONFIG list whose
 * first file makes a decoy context current, and `--context` choosing the real one.
 *
 * Last, a failure screen: a bad image whose unit fails halts the rollout; an
 * 80-column terminal shows the red headline, the problem wrapped up to the
 * failing unit's name and the failed node in the tree; `status` exits 1; `retry`
 * is refused (halted in place) and `abort` returns the pool to its last good image.
 */
import assert from "node:assert/strict";
import type { INode } from "kubernetes-models/v1/Node";
import { findCondition, isDisrupted } from "../../lib/api/mod.ts";
import { BAD_BOOT_LABEL } from "../bootc_sim/bad_boot.ts";
import { Resources } from "../../lib/kube/mod.ts";
import { ensureBuild } from "../../tools/build.ts";
import { freePort } from "../harness/process.ts";
import { startStack } from "../harness/stack.ts";
import { Tmux } from "../harness/tmux.ts";
import { waitFor } from "../harness/wait.ts";
import {
  addNodes,
  assertInvariants,
  getPool,
  patchPoolSpec,
  poolSpec,
  step,
  stopStack,
  waitConverged,
  waitNodes,
  waitPool,
} from "../e2e/scenario.ts";

const decoder = new TextDecoder();
/** Generous: a loaded 2-core machine runs the whole stack besides this test. */
const SCREEN_TIMEOUT_MS = 120_000;
/** The unit the bad image fails (the failure screen must name it on 80 columns). */
const BAD_UNIT = "app-crash.service";
/** A pool's headline while its rollout moves (`status.state`, or UpToDate's reason from an older controller). */
const MOVING = "(?:RollingOut|Staging|RolloutInProgress)";

// deno-lint-ignore no-control-regex
const ESCAPES = /\x1b\[[0-9;?]*[A-Za-z]/;

Deno.test("kubectl bootc: live status in a terminal, why, pause/resume, a failure screen, abort and retry", async (t) => {
  const [executables, stack] = await Promise.all([
    ensureBuild(),
    startStack({ limits: { web: { maxUnavailable: 1 } } }),
  ]);
  const work = await Deno.makeTempDir({ prefix: "bootc-plugin-test-" });
  // The terminal (its environment is set once the stack is known).
  const tmux = new Tmux({ name: "bootc-plugin" });
  let piped: Deno.ChildProcess | undefined;
  const lines: string[] = [];
  let pumping: Promise<void> | undefined;
  try {
    const { v1, v2, repository } = stack.images;
    // kubectl finds `kubectl-bootc` on PATH; in bundle mode the launcher finds deno via $DENO.
    const pluginPath = executables.plugin.at(-1)!;
    const distDir = pluginPath.slice(0, pluginPath.lastIndexOf("/"));
    // Nothing listens there: a command that goes to the decoy fails, naming it.
    const decoyPort = freePort();
    const decoy = `${work}/decoy.kubeconfig`;
    await Deno.writeTextFile(
      decoy,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "decoy",
        clusters: [{ name: "decoy", cluster: { server: `https://127.0.0.1:${decoyPort}` } }],
        contexts: [{ name: "decoy", context: { cluster: "decoy", user: "nobody" } }],
        users: [{ name: "nobody", user: { token: "x" } }],
      }),
    );
    const env: Record<string, string> = {
      PATH: `${distDir}:${stack.cp.binDir}:${Deno.env.get("PATH")}`,
      KUBECONFIG: `${decoy}:${work}/missing.kubeconfig:${stack.cp.kubeconfigPath}`,
      DENO: Deno.execPath(),
      HOME: work,
      LANG: "C.UTF-8",
    };
    const ctx = ["--context", "bootc-test"];

    /** Runs `kubectl bootc ARGS` with piped output (not a terminal). */
    const kubectlBootc = async (args: string[], extraEnv: Record<string, string> = {}) => {
      const out = await new Deno.Command("kubectl", {
        args: ["bootc", ...args],
        env: { ...env, ...extraEnv },
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      return {
        code: out.code,
        stdout: decoder.decode(out.stdout),
        stderr: decoder.decode(out.stderr),
      };
    };
    tmux.env = env;
    /** Polls the terminal (`pane`, default the 160-column one) until every pattern is on screen. */
    const waitScreen = (patterns: RegExp[], what: string, pane = "watch"): Promise<string> =>
      tmux.waitScreen(pane, (screen) => patterns.every((p) => p.test(screen)), {
        what,
        timeoutMs: SCREEN_TIMEOUT_MS,
      });
    /** Lines of the piped watcher already matched: each wait looks only at later ones. */
    let consumed = 0;
    /** Waits until a new plain line of the piped watcher matches. */
    const waitLine = async (pattern: RegExp, what: string): Promise<string> => {
      try {
        return await waitFor(() => {
          const i = lines.findIndex((l, i) => i >= consumed && pattern.test(l));
          if (i < 0) return undefined;
          consumed = i + 1;
          return lines[i];
        }, {
          timeoutMs: SCREEN_TIMEOUT_MS,
          intervalMs: 250,
          message: what,
        });
      } catch (e) {
        throw new Error(`${(e as Error).message}\nthe piped watcher printed:\n${lines.join("\n")}`);
      }
    };

    const nodes = await addNodes(stack, "web", 4);
    // A pod on web-1 that a PodDisruptionBudget protects: web-1's drain will wait for it.
    await stack.cp.createPod("default", "guarded", {
      nodeName: "web-1",
      labels: { app: "guarded" },
    });
    await stack.cp.createPdb("default", "guarded-pdb", {
      selector: { app: "guarded" },
      minAvailable: 1,
    });
    await stack.createPool("web", poolSpec("web", `${repository}@${v1.digest}`));
    await waitConverged(stack, "web", v1.digest, 4);

    await step(t, "status: one-shot output, the plugin found by kubectl", async () => {
      const ran = await kubectlBootc(["status", "web", ...ctx]);
      assert.equal(ran.code, 0, ran.stderr);
      assert.doesNotMatch(ran.stdout, ESCAPES, "no colour when stdout is not a terminal");
      assert.match(ran.stdout, /^web {2}✔ AllUpdated {2}4\/4 updated$/m);
      assert.match(ran.stdout, /^ {2}images {5}stable {2}\S.* {2}\(the target\)$/m);
      assert.match(ran.stdout, /progress +\[█{50}\] 100%/);
      assert.match(ran.stdout, /time left +done: all 4 nodes updated/);
      // The node tree: every node updated, its version, nothing to wait for.
      assert.match(
        ran.stdout,
        /^ {2}nodes\n {2}├─ ✔ web-1 {2}Updated {2}1\.0\n(?: {2}├─ ✔ web-\d {2}Updated {2}1\.0\n){2} {2}└─ ✔ web-4 {2}Updated {2}1\.0$/m,
      );
      // CI: healthy is 0, with or without --strict.
      assert.equal((await kubectlBootc(["status", "web", "--strict", ...ctx])).code, 0);
      // The decoy context is current: without --context the plugin goes there and says so.
      const decoyRun = await kubectlBootc(["status", "web"]);
      assert.equal(decoyRun.code, 3, "an API failure is no verdict on the pool");
      assert.match(
        decoyRun.stderr,
        new RegExp(`^kubectl bootc: .*127\\.0\\.0\\.1:${decoyPort}`, "m"),
      );
      // A pool or node that is not there: one wording, exit 2, whichever command asks.
      for (
        const [args, kind] of [
          [["status", "nope"], "BootcNodePool"],
          [["history", "nope"], "BootcNodePool"],
          [["abort", "nope"], "BootcNodePool"],
          [["why", "nope"], "Node"],
        ] as const
      ) {
        const missing = await kubectlBootc([...args, ...ctx]);
        assert.equal(missing.code, 2, args.join(" "));
        assert.equal(missing.stdout, "");
        assert.equal(missing.stderr, `kubectl bootc: ${kind} "nope" not found\n`, args.join(" "));
      }
    });

    // The live views: one in a terminal, one piped.
    await tmux.run(
      "new-session",
      "-d",
      "-x",
      "160",
      "-y",
      "50",
      "-s",
      "watch",
      // The shell stays after the plugin, so an early exit is on screen, not a lost session.
      `kubectl bootc status --watch --interval 1s --context bootc-test web; ` +
        `echo "[plugin exited $?]"; sleep 86400`,
    );
    piped = new Deno.Command("kubectl", {
      args: ["bootc", "status", "--watch", "--interval", "1s", "web", "-n", "default", ...ctx],
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    pumping = (async () => {
      let buffer = "";
      for await (const chunk of piped!.stdout.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        const parts = buffer.split("\n");
        buffer = parts.pop()!;
        lines.push(...parts);
      }
    })();

    await step(t, "watch: the terminal shows the converged pool, in colour", async () => {
      await waitScreen(
        [
          /Every 1s: kubectl bootc status web/,
          /web {2}✔ AllUpdated {2}4\/4 updated/,
          /done: all 4/,
          /└─ ✔ web-4 {2}Updated/,
        ],
        "the converged pool on screen",
      );
      const colored = await tmux.capture("watch", true);
      // deno-lint-ignore no-control-regex
      assert.match(colored, /\x1b\[[0-9;]*32m✔ AllUpdated/, "a healthy headline is green");
      // deno-lint-ignore no-control-regex
      assert.match(colored, /└─ \x1b\[[0-9;]*32m✔/, "an updated node's icon is green");
      await waitLine(/^\d\d:\d\d:\d\d web AllUpdated 4\/4 updated, .*; done$/, "a plain line");
      // NO_COLOR on the same terminal: the same screen without a colour code.
      await tmux.run(
        "new-window",
        "-d",
        "-t",
        "watch",
        "-n",
        "nocolor",
        `NO_COLOR=1 kubectl bootc status --context bootc-test web; sleep 86400`,
      );
      const plain = await waitFor(async () => {
        const text = await tmux.capture("watch:nocolor", true);
        return /web {2}✔ AllUpdated {2}4\/4 updated/.test(text) ? text : undefined;
      }, { timeoutMs: SCREEN_TIMEOUT_MS, message: "the NO_COLOR window" });
      // deno-lint-ignore no-control-regex
      assert.doesNotMatch(plain, /\x1b\[[0-9;]*(3[0-7]|1|2)m/, "no colour or bold with NO_COLOR");
      assert.match(plain, /progress +\[█{50}\] 100%/);
    });

    await step(t, "paused with the target staged: the gate, the bar and why", async () => {
      await patchPoolSpec(stack, "web", {
        image: { ref: `${repository}@${v2.digest}` },
        rollout: { paused: true },
      });
      const screen = await waitScreen(
        [
          /web {2}॥ Paused {2}0\/4 updated/,
          /progress +\[▒{50}\] 0%/,
          /█ 0 updated {2}▓ 0 rebooting {2}▒ 4 staged {2}░ 0 staging {2}· 0 pending {2}✗ 0 failed/,
          /\n {2}waiting {4}\S/,
          /time left +paused: no estimate/,
          // Every node staged and held by the pause, in slot order.
          /├─ ॥ web-1 {2}Staged {2}1\.0 {2}#1 {2}a reboot slot \(Paused\)/,
          /└─ ॥ web-4 {2}Staged {2}1\.0 {2}#4 {2}a reboot slot \(Paused\)/,
        ],
        "all four staged, paused",
      );
      // Stable: the last deployed v1; new: the v2 digest.
      assert.match(
        screen,
        new RegExp(`images {5}stable {2}\\(1\\.0\\) ${v1.digest.slice(7, 19)}\\n`),
      );
      assert.match(screen, new RegExp(`\\n {13}new {5}.*${v2.digest.slice(7, 19)}\\n`));
      assert.doesNotMatch(
        screen,
        /waiting +Paused: /,
        "the headline says Paused; the line explains",
      );
      await waitLine(/web Paused 0\/4 updated, 0 rebooting, 4 staged, .*waiting: Paused/, "paused");
      // CI: a paused rollout is no failure (0), unless --strict asks for a finished one (4).
      assert.equal((await kubectlBootc(["status", "web", ...ctx])).code, 0);
      assert.equal((await kubectlBootc(["status", "web", "--strict", ...ctx])).code, 4);
      // The slot queue is the pool's published status.queue, written with the pool's
      // coalesced progress: it may trail the BootcNodes by a status write.
      const queued =
        /^web-3: staged, waiting for a reboot slot \(3rd of 4 in the slot queue\): the pool waits \(Paused\)$/m;
      const why = await waitFor(async () => {
        const out = await kubectlBootc(["why", "web-3", ...ctx]);
        return out.code === 0 && queued.test(out.stdout) ? out : undefined;
      }, {
        timeoutMs: 30_000,
        intervalMs: 500,
        message: "why shows web-3 3rd of 4 in the slot queue",
      });
      assert.equal(why.code, 0, why.stderr);
      assert.match(why.stdout, queued);
      assert.match(why.stdout, /slot queue +3rd of 4: web-1, web-2, \[web-3\], web-4 · 0\/1 slot/);
      assert.match(why.stdout, /pool waits +Paused:/);
      assert.match(why.stdout, /^Conditions:\n {2}TYPE +STATUS +REASON +AGE +MESSAGE\n/m);
      assert.match(why.stdout, /^ {2}Idle +False +Staged +\S+ +Image staged/m);
      // Staging is no event (conditions carry it): events start with the slot.
      assert.match(why.stdout, /^Events \(latest \d+\):\n {2}(none|AGE +TYPE +REASON +MESSAGE)\n/m);
    });

    await step(t, "resume: web-1 takes the slot and its drain waits on the PDB", async () => {
      const resumed = await kubectlBootc(["resume", "web", ...ctx]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal(resumed.stdout, "pool web resumed: reboot slots are handed out again\n");
      assert.equal((await getPool(stack, "web")).spec.rollout.paused, false);
      await waitScreen(
        [
          new RegExp(`web {2}◌ ${MOVING} {2}0/4 updated`),
          /progress +\[▓+▒+\] 0%/,
          /▓ 1 rebooting {2}▒ 3 staged/,
          /in flight +web-1 · 1 reboot slot\(s\) in use \(maxUnavailable 1\)/,
          /├─ ◌ web-1 {2}Draining {2}1\.0 {2}slot {2}\S/,
          /├─ ◌ web-2 +Staged +1\.0 +#1 +a reboot slot \(/,
        ],
        "web-1 in flight",
      );
      await waitLine(/in flight: web-1/, "web-1 in flight, piped");
      const draining = await kubectlBootc(["why", "web-1", ...ctx]);
      assert.equal(draining.code, 0, draining.stderr);
      assert.match(
        draining.stdout,
        /^web-1: holds a reboot slot \(taken \S+ ago\); draining: cordoned, evicting its pods/m,
      );
      assert.match(draining.stdout, /node +Ready, cordoned/);
      assert.match(
        draining.stdout,
        /disruption +reboot slot since \d\d:\d\d:\d\d \(\S+ ago\) for pool web; was cordoned before: false/,
      );
      assert.match(draining.stdout, /SlotAssigned/);
      const waiting = await kubectlBootc(["why", "web-2", ...ctx]);
      assert.match(
        waiting.stdout,
        /^web-2: staged, waiting for a reboot slot \(1st of 3 in the slot queue\); 1\/1 slot\(s\) in use \(web-1\)/m,
      );
    });

    await step(t, "pause mid-flight: web-1 finishes, nothing else starts", async () => {
      const paused = await kubectlBootc(["pause", "web", ...ctx]);
      assert.equal(paused.code, 0, paused.stderr);
      assert.match(paused.stdout, /^pool web paused: no new reboot slots/);
      assert.equal((await getPool(stack, "web")).spec.rollout.paused, true);
      const again = await kubectlBootc(["pause", "web", ...ctx]);
      assert.equal(again.stdout, "pool web was already paused\n");
      await stack.cp.client.resource(Resources.poddisruptionbudgets, "default").delete(
        "guarded-pdb",
      );
      await waitNodes(
        stack,
        "web",
        (bns) =>
          bns.some((bn) =>
            bn.metadata.name === "web-1" && bn.status?.booted?.imageDigest === v2.digest
          ),
        "web-1 should finish its update while the pool is paused",
        SCREEN_TIMEOUT_MS,
      );
      await waitScreen(
        [
          /web {2}॥ Paused {2}1\/4 updated/,
          /█ 1 updated {2}▓ 0 rebooting {2}▒ 3 staged/,
          /in flight +none/,
          /├─ ✔ web-1 {2}Updated {2}2\.0\n/,
        ],
        "web-1 updated, the rest paused",
      );
      // A paused rollout is not done: a wait for it runs out and says so.
      const waited = await kubectlBootc(["status", "web", "--timeout", "2s", ...ctx]);
      assert.equal(waited.code, 4, waited.stderr);
      assert.match(waited.stderr, /timed out after 2s waiting for web \(still progressing\)/);
    });

    await step(t, "a budget of 0: the gate is named and the time left is estimated", async () => {
      await patchPoolSpec(stack, "web", { rollout: { budgets: [{ maxUnavailable: 0 }] } });
      const resumed = await kubectlBootc(["resume", "web", ...ctx]);
      assert.equal(resumed.code, 0, resumed.stderr);
      await waitScreen(
        [
          /web {2}॥ BudgetExhausted {2}1\/4 updated/,
          /waiting +\S/,
          /time left +~\S+ \(1 updated in this rollout, one every \S+; 3 to go\)/,
        ],
        "the budget gate and an estimate",
      );
      await waitLine(/web BudgetExhausted 1\/4 updated.*waiting: BudgetExhausted; ~\S+ left$/, "");
      const why = await kubectlBootc(["why", "web-3", ...ctx]);
      assert.match(
        why.stdout,
        /^web-3: staged, waiting for a reboot slot \(2nd of 3 in the slot queue\): the pool waits \(BudgetExhausted\)$/m,
      );
    });

    await step(t, "the rollout completes on screen and in the piped lines", async () => {
      // Started before the budget is lifted, a wait ends by itself once the rollout is done.
      const waiting = kubectlBootc(["status", "web", "--timeout", "10m", ...ctx]);
      await patchPoolSpec(stack, "web", { rollout: { budgets: null } });
      await waitConverged(stack, "web", v2.digest, 4, SCREEN_TIMEOUT_MS);
      const waited = await waiting;
      assert.equal(waited.code, 0, waited.stderr);
      assert.match(waited.stdout, /web AllUpdated 4\/4 updated.*; done$/m);
      const screen = await waitScreen(
        [
          /web {2}✔ AllUpdated {2}4\/4 updated/,
          /progress +\[█{50}\] 100%/,
          /█ 4 updated {2}▓ 0 rebooting {2}▒ 0 staged {2}░ 0 staging {2}· 0 pending {2}✗ 0 failed/,
          /time left +done: all 4 nodes updated/,
        ],
        "the finished rollout",
      );
      assert.doesNotMatch(screen, /plugin exited/);
      await waitLine(/web AllUpdated 4\/4 updated, 0 rebooting, 0 staged.*; done$/, "done, piped");
      piped!.kill("SIGTERM");
      const status = await piped!.status;
      piped = undefined;
      await pumping;
      assert.equal(status.code, 0, "SIGTERM stops the watch cleanly");
      for (const line of lines) {
        assert.doesNotMatch(line, ESCAPES, "plain lines only when piped");
        assert.match(line, /^\d\d:\d\d:\d\d web /);
      }
      // A line per change, not per refresh: far fewer lines than refreshes.
      const keys = lines.map((l) => l.slice(9).replace(/; ~\S+ left$/, ""));
      for (let i = 1; i < keys.length; i++) assert.notEqual(keys[i], keys[i - 1], lines[i]);
      const nodeObjects = await stack.cp.client.resource<INode>(Resources.nodes).list();
      assert.ok(nodeObjects.items.every((n) => !isDisrupted(n)));
      await assertInvariants(stack, nodes);
      const done = await getPool(stack, "web");
      assert.equal(findCondition(done.status?.conditions, "UpToDate")?.reason, "AllUpdated");
    });

    await step(t, "rollback and history", async () => {
      const history = await kubectlBootc(["history", "web", ...ctx]);
      assert.equal(history.code, 0, history.stderr);
      // Nothing runs: abort has nothing to stop, retry nothing to retry (both refused, 1).
      const idle = await kubectlBootc(["abort", "web", ...ctx]);
      assert.equal(idle.code, 1);
      assert.match(idle.stderr, /^kubectl bootc: nothing to abort: pool web is not rolling out/);
      const fine = await kubectlBootc(["retry", "web", ...ctx]);
      assert.equal(fine.code, 1);
      assert.match(fine.stderr, /^kubectl bootc: nothing to retry: pool web has no failed image/);
      // approve: the pool asks for no approval (refused, 1); a bad --revision is a usage error.
      const ungated = await kubectlBootc(["approve", "web", ...ctx]);
      assert.equal(ungated.code, 1);
      assert.match(
        ungated.stderr,
        /^kubectl bootc: nothing to approve: pool web asks for no approval/,
      );
      assert.equal((await kubectlBootc(["approve", "web", "--revision", "x", ...ctx])).code, 2);
      assert.match(history.stdout, /^REVISION\s+OUTCOME\s+STARTED\s+ENDED\s+DIGEST/);
      // Converged on v2: its revision succeeded and is marked as the target.
      const current = (await getPool(stack, "web")).status?.history?.at(-1);
      assert.equal(current?.digest, v2.digest);
      assert.equal(current?.outcome, "Succeeded");
      assert.match(history.stdout, new RegExp(`^${current?.revision}\\*\\s+Succeeded`, "m"));
      const unknown = await kubectlBootc(["rollback", "web", "--to-revision", "99", ...ctx]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /pool web has no revision 99 in its history/);
      // Mid-rollout to v1 (paused, so nothing reboots): rollback returns to v2.
      await patchPoolSpec(stack, "web", {
        image: { ref: `${repository}@${v1.digest}` },
        rollout: { paused: true },
      });
      await waitFor(async () => (await getPool(stack, "web")).status?.targetDigest === v1.digest, {
        timeoutMs: SCREEN_TIMEOUT_MS,
        message: "the pool should target v1",
      });
      const back = await kubectlBootc([
        "rollback",
        "web",
        "--to-revision",
        String(current?.revision),
        ...ctx,
      ]);
      assert.equal(back.code, 0, back.stderr);
      assert.match(back.stdout, new RegExp(`spec\\.image\\.ref .* → ${repository}@${v2.digest}`));
      assert.equal((await getPool(stack, "web")).spec.image.ref, `${repository}@${v2.digest}`);
      await kubectlBootc(["resume", "web", ...ctx]);
      await waitConverged(stack, "web", v2.digest, 4, SCREEN_TIMEOUT_MS);
      await assertInvariants(stack, nodes);
      // v2 was rolled out twice: only its newest revision is the current one.
      const again = await kubectlBootc(["history", "web", ...ctx]);
      const marked = again.stdout.split("\n").filter((l) => /^\d+\*/.test(l));
      const newest = (await getPool(stack, "web")).status?.history?.at(-1);
      assert.deepEqual(
        marked.map((l) => l.split(/\s+/)[0]),
        [`${newest?.revision}*`],
        again.stdout,
      );
      assert.ok(
        (await getPool(stack, "web")).status?.history?.filter((h) => h.digest === v2.digest)
          .length! >= 2,
        "v2 has two revisions",
      );
    });

    await step(t, "a failure screen: halted on a failed unit, red, exit 1; abort", async () => {
      const bad = await stack.registry.pushImage({
        repository: "bootc/os",
        tag: "v3",
        version: "3.0",
        labels: { [BAD_BOOT_LABEL]: `unit-fails:${BAD_UNIT}` },
      });
      // An 80-column terminal: the width the screen is made for.
      await tmux.run(
        "new-session",
        "-d",
        "-x",
        "80",
        "-y",
        "50",
        "-s",
        "narrow",
        `kubectl bootc status --watch --interval 1s --context bootc-test web; ` +
          `echo "[plugin exited $?]"; sleep 86400`,
      );
      // onFailure Halt (the default): the node that fails keeps its slot, nothing else starts.
      await patchPoolSpec(stack, "web", { image: { ref: `${repository}@${bad.digest}` } });
      const screen = await waitScreen(
        [
          /^web {2}✖ \S+ {2}\d\/4 updated$/m,
          /^ {2}problem {4}(?:\S+: )?node web-\d failed health checks: /m,
          new RegExp(`^ {2}images {5}stable {2}.*\\n {13}new {5}.*${bad.digest.slice(7, 19)}`, "m"),
          new RegExp(`✖ web-\\d +Failed +3\\.0 +slot +failed HostHealthy: ${BAD_UNIT}`),
        ],
        "the halted rollout on 80 columns",
        "narrow",
      );
      // The problem is wrapped, not cut: the failing unit is named before the images.
      const problem = screen.slice(screen.indexOf("  problem"), screen.indexOf("  images"));
      assert.ok(problem.includes(BAD_UNIT), `the problem names ${BAD_UNIT}:\n${problem}`);
      for (const line of screen.split("\n")) assert.ok([...line].length <= 80, line);
      const colored = await tmux.capture("narrow", true);
      // deno-lint-ignore no-control-regex
      assert.match(colored, /\x1b\[[0-9;]*31m✖ \S+/, "the headline is red");
      // deno-lint-ignore no-control-regex
      assert.match(colored, /\x1b\[[0-9;]*31m✖\x1b\[[0-9;]*m web-\d/, "the failed node is red");
      // CI sees it: status exits 1, the same screen without colour.
      const once = await kubectlBootc(["status", "web", ...ctx]);
      assert.equal(once.code, 1, once.stdout);
      // A wait ends at once on a halted pool: it will not finish by itself.
      const waited = await kubectlBootc(["status", "web", "--timeout", "10m", ...ctx]);
      assert.equal(waited.code, 1, waited.stderr);
      assert.match(once.stdout, /^web {2}✖ \S+ {2}\d\/4 updated$/m);
      assert.match(once.stdout, new RegExp(`failed HostHealthy: ${BAD_UNIT}`));
      // Halted in place: retry has no failure record to clear; it says what to do.
      const retry = await kubectlBootc(["retry", "web", ...ctx]);
      assert.equal(retry.code, 1);
      assert.match(retry.stderr, /cannot retry: .* is halted in place \(onFailure Halt\)/);
      // abort: back to the last good image, v2; the failed node is rolled back.
      const aborted = await kubectlBootc(["abort", "web", ...ctx]);
      assert.equal(aborted.code, 0, aborted.stderr);
      assert.match(aborted.stdout, /^pool web: rollout aborted: spec\.image\.ref .* → /);
      assert.equal((await getPool(stack, "web")).spec.image.ref, `${repository}@${v2.digest}`);
      await waitConverged(stack, "web", v2.digest, 4, SCREEN_TIMEOUT_MS);
      await waitScreen(
        [/^web {2}✔ AllUpdated {2}4\/4 updated$/m, /└─ ✔ web-4 {2}Updated {2}2\.0/],
        "the aborted rollout, back on v2",
        "narrow",
      );
      assert.equal((await kubectlBootc(["status", "web", ...ctx])).code, 0);
      await assertInvariants(stack, nodes);
    });

    await step(t, "RollbackPool: rolled back in red; retry rolls it out again; abort", async () => {
      const bad = await stack.registry.pushImage({
        repository: "bootc/os",
        tag: "v4",
        version: "4.0",
        labels: { [BAD_BOOT_LABEL]: `unit-fails:${BAD_UNIT}` },
      });
      const badRef = `${repository}@${bad.digest}`;
      const short = bad.digest.slice(7, 19);
      await patchPoolSpec(stack, "web", {
        image: { ref: badRef },
        rollout: { onFailure: "RollbackPool" },
      });
      const rolledBack = async (what: string) => {
        await waitPool(
          stack,
          "web",
          async () => {
            const p = await getPool(stack, "web");
            return p.status?.rollbackHold?.failedImage === badRef;
          },
          what,
          SCREEN_TIMEOUT_MS,
        );
        await waitConverged(stack, "web", v2.digest, 4, SCREEN_TIMEOUT_MS);
      };
      await rolledBack("the pool rolls back from the bad image");
      await waitScreen(
        [
          /^web {2}✖ RolledBack {2}4\/4 updated$/m,
          new RegExp(`^ {13}failed {2}.*${short} {2}\\(rolled back from\\)$`, "m"),
        ],
        "the rolled-back pool",
        "narrow",
      );
      assert.equal((await kubectlBootc(["status", "web", ...ctx])).code, 1);
      // retry: the controller forgets the failure and rolls the image out again.
      const retry = await kubectlBootc(["retry", "web", ...ctx]);
      assert.equal(retry.code, 0, retry.stderr);
      const revision = /retrying revision (\d+) /.exec(retry.stdout)?.[1];
      assert.ok(revision, retry.stdout);
      assert.equal(
        (await getPool(stack, "web")).metadata.annotations?.["bootc.dev/retry-revision"],
        revision,
      );
      // Still bad: it fails again, counted (the third failure: the circuit opens) and held.
      const again = await waitPool(
        stack,
        "web",
        async () => {
          const p = await getPool(stack, "web");
          const retried = p.status?.history?.find((h) =>
            h.message === `retry of revision ${revision} (bootc.dev/retry-revision)` ||
            (h.digest === bad.digest && h.revision > Number(revision))
          );
          return retried?.outcome === "RolledBack" && p.status?.rollbackHold && p;
        },
        "the retried image is rolled out and fails again",
        SCREEN_TIMEOUT_MS,
      );
      assert.equal(again.status?.consecutiveFailures, 3);
      await waitConverged(stack, "web", v2.digest, 4, SCREEN_TIMEOUT_MS);
      // abort: the spec settles on the image the pool runs; the hold ends, no reboot.
      const aborted = await kubectlBootc(["abort", "web", ...ctx]);
      assert.equal(aborted.code, 0, aborted.stderr);
      assert.match(aborted.stdout, /^pool web: rollout of \S+ aborted; it stays on /);
      assert.equal((await getPool(stack, "web")).spec.image.ref, `${repository}@${v2.digest}`);
      // The circuit stays open until someone closes it: red, exit 1; retry closes it.
      await waitScreen([/^web {2}✖ CircuitOpen {2}4\/4 updated$/m], "the open circuit", "narrow");
      assert.equal((await kubectlBootc(["status", "web", ...ctx])).code, 1);
      const reset = await kubectlBootc(["retry", "web", ...ctx]);
      assert.equal(reset.code, 0, reset.stderr);
      assert.match(reset.stdout, /circuit breaker reset \(3 failed rollouts in a row\)/);
      await waitScreen([/^web {2}✔ AllUpdated {2}4\/4 updated$/m], "healthy again", "narrow");
      assert.equal((await kubectlBootc(["status", "web", ...ctx])).code, 0);
      await assertInvariants(stack, nodes);
    });
  } finally {
    if (piped) {
      piped.kill("SIGKILL");
      await piped.status;
    }
    await pumping?.catch(() => {});
    await tmux.close();
    await stopStack(stack);
    await Deno.remove(work, { recursive: true });
  }
});
