/**
 * The daemon as a real child process against a real API server (etcd +
 * kube-apiserver with the CRDs), the bootc simulator and a real registry.
 * The harness plays the controller: it creates the pool-owned BootcNodes and
 * the Nodes, and writes the reboot slot and drain annotations on a Node before
 * it asks for Booted.
 */
import assert from "node:assert/strict";
import type { ISecret } from "kubernetes-models/v1/Secret";
import {
  ANNOTATION_DRAINED_AT,
  ANNOTATION_DRAINED_FOR,
  ANNOTATION_IN_REBOOT_SLOT,
  ANNOTATION_SLOT_POOL,
  ANNOTATION_WAS_CORDONED,
  type BootcNode,
  type BootcNodePool,
  findCondition,
} from "../lib/api/mod.ts";
import { shortReference } from "../lib/api/display.ts";
import type { CoreEvent } from "../lib/kube/events.ts";
import { Resources } from "../lib/kube/resources.ts";
import type { KubeObject, ResourceClient } from "../lib/kube/types.ts";
import { SimulatedHost } from "../tests/bootc_sim/mod.ts";
import type { ControlPlane } from "../tests/harness/control_plane.ts";
import { startCrdApiServer } from "../tests/harness/crd_api_server.ts";
import { STAGING_REPORT_DELAY_MS } from "./decide.ts";
import { killHostProcesses } from "../tests/harness/fleet.ts";
import { startRegistry, type TestRegistry } from "../tests/harness/registry.ts";
import { waitFor } from "../tests/harness/wait.ts";

/** The daemon entry point; DAEMON_ENTRY runs a build (e.g. dist/daemon.js) instead. */
const MAIN = Deno.env.get("DAEMON_ENTRY") ?? new URL("./main.ts", import.meta.url).pathname;
const NAMESPACE = "bootc-operator";
const POOL_NAME = "workers";

/** What the test writes and reads of a core/v1 Node. */
type CoreNode = KubeObject & { spec?: { unschedulable?: boolean } };

/** A daemon child process; its JSON-lines log is kept for failure messages. */
class DaemonProcess {
  readonly child: Deno.ChildProcess;
  readonly log: string[] = [];
  readonly #done: Promise<void>;

  constructor(args: string[]) {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", MAIN, ...args],
      stdout: "null",
      stderr: "piped",
      stdin: "null",
    }).spawn();
    this.child = child;
    this.#done = (async () => {
      const lines = child.stderr.pipeThrough(new TextDecoderStream());
      let buffer = "";
      for await (const chunk of lines) {
        buffer += chunk;
        const parts = buffer.split("\n");
        buffer = parts.pop()!;
        this.log.push(...parts);
      }
      if (buffer) this.log.push(buffer);
    })();
  }

  /** Sends `signal` and waits for the exit; returns the exit status. */
  async stop(signal: Deno.Signal = "SIGKILL"): Promise<Deno.CommandStatus> {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone.
    }
    const status = await this.child.status;
    await this.#done;
    return status;
  }

  tail(n = 30): string {
    return this.log.slice(-n).join("\n");
  }
}

interface Node {
  name: string;
  host: SimulatedHost;
  daemon?: DaemonProcess;
}

function daemonArgs(cp: ControlPlane, node: Node, extra: string[] = []): string[] {
  const sim = node.host.command().join(" ");
  return [
    "run",
    "--kubeconfig",
    cp.kubeconfigPath,
    "--node-name",
    node.name,
    "--host-root",
    node.host.root,
    "--host-exec-prefix",
    "",
    "--bootc-command",
    sim,
    "--systemctl-command",
    `${sim} systemctl`,
    "--poll-interval",
    "3s",
    "--status-timeout",
    "30s",
    ...extra,
  ];
}

function condition(node: BootcNode | undefined, type: string): string | undefined {
  const c = findCondition(node?.status?.conditions, type);
  return c ? `${c.status}/${c.reason}` : undefined;
}

Deno.test({
  name: "daemon process: real API server, bootc simulator and registry",
  // Child processes and the API server's HTTP client outlive single steps by design.
  sanitizeOps: true,
  sanitizeResources: true,
}, async (t) => {
  let cp: ControlPlane | undefined;
  let registry: TestRegistry | undefined;
  let authRegistry: TestRegistry | undefined;
  const nodes: Node[] = [];
  try {
    [cp, registry, authRegistry] = await Promise.all([
      startCrdApiServer(),
      startRegistry(),
      startRegistry({ auth: "htpasswd", users: { alice: "a-secret", bob: "b-secret" } }),
    ]);
    await cp.createNamespace(NAMESPACE);
    const api = cp;
    const bootcNodes: ResourceClient<BootcNode> = cp.client.resource<BootcNode>(
      Resources.bootcNodes,
    );
    const secrets: ResourceClient<ISecret> = cp.client.resource<ISecret>(
      Resources.secrets,
      NAMESPACE,
    );
    const coreNodes = cp.client.resource<CoreNode>(Resources.nodes);
    const events = cp.client.resource<CoreEvent>(Resources.events, "default");
    // The pool that owns the BootcNodes (no controller runs: the test plays its part).
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);
    const pool = await pools.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNodePool",
      metadata: { name: POOL_NAME },
      spec: {
        nodeSelector: { matchLabels: { "bootc.dev/test-pool": "none" } },
        image: { ref: "registry.example/os:latest" },
        rollout: {
          maxUnavailable: 1,
          paused: true,
          drainTimeoutSeconds: 600,
          rebootTimeoutSeconds: 1800,
          minReadySeconds: 0,
        },
        disruption: { rebootPolicy: "RebootOnly" },
      },
    });
    const ownerReferences = [{
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNodePool",
      name: POOL_NAME,
      uid: pool.metadata.uid!,
      controller: true,
      blockOwnerDeletion: true,
    }];
    const repo = `${registry.host}/os`;
    const pushed = await Promise.all(
      ["1", "2", "3"].map((v) =>
        registry!.pushImage({ repository: "os", tag: `v${v}`, version: v })
      ),
    );
    const [v1, v2, v3] = pushed.map((p) => `${repo}@${p.digest}`);

    const start = (node: Node, extra: string[] = []) => {
      node.daemon = new DaemonProcess(daemonArgs(api, node, extra));
    };
    const get = (name: string) => bootcNodes.get(name);
    const waitForNode = async (
      node: Node,
      check: (n: BootcNode) => boolean,
      message: string,
      timeoutMs = 60_000,
    ) =>
      await waitFor(async () => {
        const n = await get(node.name);
        return check(n) ? n : undefined;
      }, {
        timeoutMs,
        intervalMs: 200,
        message: () => `${node.name}: ${message}\n--- daemon log ---\n${node.daemon?.tail()}`,
      });
    // A merge patch of the spec does not race with the daemon's status writes.
    const setSpec = async (
      node: Node,
      spec: { [K in keyof BootcNode["spec"]]?: BootcNode["spec"][K] | null },
    ) => {
      await bootcNodes.patch(node.name, { spec }, { type: "merge" });
    };
    /** A host, its Node, and its BootcNode (owned by the pool unless `owned` is false). */
    const newNode = async (
      name: string,
      image: string,
      spec: Partial<BootcNode["spec"]> = {},
      { owned = true } = {},
    ) => {
      const host = await SimulatedHost.create({ image });
      const node: Node = { name, host };
      nodes.push(node);
      await coreNodes.create({ apiVersion: "v1", kind: "Node", metadata: { name } });
      await bootcNodes.create({
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNode",
        metadata: { name, ...(owned ? { ownerReferences } : {}) },
        spec: {
          desiredImage: image,
          desiredImageState: "Staged",
          rebootPolicy: "RebootOnly",
          ...spec,
        },
      });
      return node;
    };
    /** The controller's part before Booted: slot and cordon, then (optionally) the finished drain. */
    const grantSlot = async (node: Node, drainedFor?: string) => {
      const annotations: Record<string, string> = {
        [ANNOTATION_IN_REBOOT_SLOT]: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
        [ANNOTATION_SLOT_POOL]: POOL_NAME,
        [ANNOTATION_WAS_CORDONED]: "false",
      };
      if (drainedFor) {
        annotations[ANNOTATION_DRAINED_AT] = annotations[ANNOTATION_IN_REBOOT_SLOT];
        annotations[ANNOTATION_DRAINED_FOR] = drainedFor;
      }
      await coreNodes.patch(node.name, {
        metadata: { annotations },
        spec: { unschedulable: true },
      }, { type: "merge" });
    };
    /** The controller's release after the reboot: record removed, uncordoned, Staged again. */
    const release = async (node: Node) => {
      const annotations = Object.fromEntries(
        [
          ANNOTATION_IN_REBOOT_SLOT,
          ANNOTATION_SLOT_POOL,
          ANNOTATION_WAS_CORDONED,
          ANNOTATION_DRAINED_AT,
          ANNOTATION_DRAINED_FOR,
        ].map((k) => [k, null]),
      );
      await coreNodes.patch(node.name, {
        metadata: { annotations },
        spec: { unschedulable: null },
      }, { type: "merge" });
      await setSpec(node, { desiredImageState: "Staged" });
    };
    /** Events the daemon recorded on a BootcNode, by reason. */
    /** Events of `reason` about the node's BootcNode (the reboot itself: about its Node). */
    const eventsOf = async (node: Node, reason: string) =>
      (await events.list()).items.filter((e) =>
        e.involvedObject.kind ===
          (reason === "Rebooting" || reason === "RollingBack" ? "Node" : "BootcNode") &&
        e.involvedObject.name === node.name && e.reason === reason
      );
    /**
     * The harness's reboot: kill the daemon and every bootc process of the host (the pending
     * --apply, and a `bootc status` the daemon started that would take the lock once the apply
     * is gone), as the machine going down does; reboot; restart.
     */
    const reboot = async (node: Node) => {
      await node.daemon?.stop("SIGKILL");
      await killHostProcesses(node.host.root);
      await node.host.killLockHolder();
      await node.host.reboot();
      start(node);
    };

    const a = await newNode("node-a", v1);

    await t.step("Idle on start-up, auto-update timer masked and reported", async () => {
      start(a);
      const n = await waitForNode(
        a,
        (n) => condition(n, "Idle") === "True/Idle" && n.status?.autoUpdatesDisabled === true,
        "Idle with autoUpdatesDisabled",
      );
      assert.equal(condition(n, "Degraded"), "False/Healthy");
      assert.equal(n.status?.booted?.image, v1);
      assert.equal(n.status?.bootcVersion, "1.16.10");
      const { units } = await a.host.readState();
      const timer = units["bootc-fetch-apply-updates.timer"];
      assert.equal(timer.runtimeMasked, true);
      assert.equal(timer.active, false);
    });

    await t.step("Idle → Staged (locked), a quick pull reported in one write", async () => {
      await setSpec(a, { desiredImage: v2 });
      const n = await waitForNode(a, (n) => condition(n, "Idle") === "False/Staged", "Staged");
      assert.equal(n.status?.staged?.image, v2);
      assert.equal(n.status?.staged?.downloadOnly, true);
      const { state } = await a.host.readState();
      assert.equal(state.staged?.downloadOnly, true);
      assert.ok(
        !a.daemon!.log.some((l) => l.includes('"idle":"False/Staging"')),
        "a pull under 5 s writes no Staging of its own",
      );
    });

    await t.step("re-stage when desiredImage changes while staged", async () => {
      await setSpec(a, { desiredImage: v3 });
      const n = await waitForNode(
        a,
        (n) => condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v3,
        "Staged v3",
      );
      assert.equal(n.status?.booted?.image, v1);
    });

    await t.step(
      "slot + drain for the target, Booted → Rebooting (persisted) → reboot → Idle",
      async () => {
        await grantSlot(a, v3);
        await setSpec(a, { desiredImageState: "Booted" });
        const request = await a.host.waitForRebootRequest({ timeoutMs: 60_000 });
        assert.deepEqual(request.command.slice(-3), ["switch", "--from-downloaded", "--apply"]);
        const n = await get(a.name);
        assert.equal(condition(n, "Idle"), "False/Rebooting", "persisted before the reboot");
        assert.equal(condition(n, "RebootAllowed"), "True/SlotAndDrain");
        await reboot(a);
        const after = await waitForNode(a, (n) => condition(n, "Idle") === "True/Idle", "Idle");
        assert.equal(after.status?.booted?.image, v3);
        assert.equal(after.status?.rollback?.image, v1);
        assert.equal(after.status?.staged, undefined);
        await release(a);
        await waitForNode(
          a,
          (n) => condition(n, "RebootAllowed") === "False/NotRequested",
          "RebootAllowed False/NotRequested once released",
        );
      },
    );

    await t.step("kill -9 mid-stage, restart: staging resumes", async () => {
      // A slow pull: it says Staging once it has run 5 s.
      await a.host.setPullDelayMs(STAGING_REPORT_DELAY_MS + 4_000);
      await setSpec(a, { desiredImage: v2, desiredImageState: "Staged" });
      await waitForNode(a, (n) => condition(n, "Idle") === "False/Staging", "Staging");
      await a.daemon!.stop("SIGKILL");
      start(a);
      const n = await waitForNode(
        a,
        (n) => condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v2,
        "Staged after restart",
      );
      assert.equal(n.status?.staged?.downloadOnly, true);
      await a.host.setPullDelayMs(0);
    });

    await t.step("unexpected reboot discards the locked stage: re-staged", async () => {
      await reboot(a);
      const { state } = await a.host.readState();
      assert.equal(state.staged, null, "the locked stage is gone after the reboot");
      // The API still shows the old Staged status: wait for the host to be staged again.
      await waitFor(async () => (await a.host.readState()).state.staged?.downloadOnly === true, {
        timeoutMs: 60_000,
        message: () => `host re-staged\n${a.daemon?.tail()}`,
      });
      const n = await waitForNode(
        a,
        (n) => condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v2,
        "re-staged",
      );
      assert.equal(n.status?.booted?.image, v3);
      // The status claimed the lost stage: the re-stage says Staging at once, before its pull.
      assert.ok(
        a.daemon!.log.some((l) => l.includes('"idle":"False/Staging"')),
        "went through Staging again",
      );
    });

    await t.step(
      "a hung pull the spec no longer wants is stopped: the revert settles",
      async () => {
        const failedBefore = (await eventsOf(a, "StagingFailed")).length;
        const v4 = `${repo}@${
          (await registry!.pushImage({ repository: "os", tag: "v4", version: "4" })).digest
        }`;
        // A pull that would hang for 10 minutes (a registry that stopped answering).
        await a.host.setPullDelayMs(600_000);
        await setSpec(a, { desiredImage: v4 });
        await waitForNode(
          a,
          (n) =>
            condition(n, "Idle") === "False/Staging" &&
            n.status?.observedGeneration === n.metadata.generation,
          "Staging v4",
        );
        assert.ok(await a.host.lockHolder(), "the pull holds the sysroot lock");
        await a.host.setPullDelayMs(0);
        // Back to v2, staged before: the v4 pull is stopped, and the node is Staged again at once.
        await setSpec(a, { desiredImage: v2 });
        const n = await waitForNode(
          a,
          (n) =>
            condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v2 &&
            n.status?.observedGeneration === n.metadata.generation,
          "Staged v2 without waiting for the v4 pull",
          30_000,
        );
        assert.equal(condition(n, "Degraded"), "False/Healthy");
        assert.equal(await a.host.lockHolder(), null, "no bootc process left holding the lock");
        assert.equal((await a.host.readState()).state.staged?.downloadOnly, true, "still locked");
        assert.equal((await eventsOf(a, "StagingFailed")).length, failedBefore);
        assert.ok(a.daemon!.log.some((l) => l.includes("pull stopped")), a.daemon!.tail());
      },
    );

    await t.step("idle: one watch, no writes; RSS", async () => {
      await new Promise((r) => setTimeout(r, 4_000)); // settle
      const before = await apiMetrics(api);
      const windowMs = 20_000;
      await new Promise((r) => setTimeout(r, windowMs));
      const after = await apiMetrics(api);
      const delta = (verb: string, resource = "bootcnodes") =>
        (after.requests.get(`${resource}|${verb}`) ?? 0) -
        (before.requests.get(`${resource}|${verb}`) ?? 0);
      const writes = ["POST", "PUT", "PATCH", "DELETE"].map((v) => delta(v))
        .reduce((x, y) => x + y, 0);
      const reads = ["GET", "LIST"].map((v) => delta(v)).reduce((x, y) => x + y, 0);
      const nodeReads = delta("GET", "nodes");
      const eventWrites = delta("POST", "events") + delta("PATCH", "events");
      const rss = await rssKiB(a.daemon!.child.pid);
      console.log(
        `[idle ${windowMs / 1000}s] bootcnodes: open watches ${after.watches}, new watches ${
          delta("WATCH")
        }, reads ${reads}, writes ${writes}; Node reads ${nodeReads}; event writes ${eventWrites}; ` +
          `daemon RSS ${(rss / 1024).toFixed(1)} MiB`,
      );
      assert.equal(after.watches, 1, "exactly one open watch on bootcnodes");
      assert.equal(delta("WATCH"), 0);
      assert.equal(writes, 0);
      assert.equal(reads, 0);
      assert.equal(nodeReads, 0, "the Node is read only when an apply is due");
      assert.equal(eventWrites, 0);
    });

    await t.step("graceful SIGTERM", async () => {
      const status = await a.daemon!.stop("SIGTERM");
      assert.equal(status.code, 0, a.daemon!.tail());
      const last = JSON.parse(a.daemon!.log.at(-1)!);
      assert.equal(last.msg, "stopped");
      assert.equal(last.node, "node-a");
      a.daemon = undefined;
    });

    await t.step("standalone status prints the status it would write", async () => {
      const sim = a.host.command().join(" ");
      const common = [
        "run",
        "--allow-all",
        MAIN,
        "status",
        "--host-root",
        a.host.root,
        "--host-exec-prefix",
        "",
        "--bootc-command",
        sim,
        "--systemctl-command",
        `${sim} systemctl`,
      ];
      const offline = await new Deno.Command(Deno.execPath(), {
        args: [...common, "--desired-image", v2, "--desired-image-state", "Booted"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(offline.code, 0, new TextDecoder().decode(offline.stderr));
      const status = JSON.parse(new TextDecoder().decode(offline.stdout));
      assert.equal(status.booted.image, v3);
      assert.equal(status.staged.image, v2);
      assert.equal(status.autoUpdatesDisabled, true);
      // Offline there is no Node to hold a reboot slot: the daemon would keep the image staged.
      const idle = findCondition(status.conditions, "Idle");
      assert.equal(`${idle?.status}/${idle?.reason}`, "False/Staged");
      const allowed = findCondition(status.conditions, "RebootAllowed");
      assert.equal(`${allowed?.status}/${allowed?.reason}`, "False/NoRebootSlot");
      assert.match(allowed!.message, /offline evaluation/);
      // Nothing was applied: status is read-only.
      assert.equal(await a.host.rebootRequested(), false);
      const fromApi = await new Deno.Command(Deno.execPath(), {
        args: [...common, "--kubeconfig", api.kubeconfigPath, "--node-name", a.name],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(fromApi.code, 0, new TextDecoder().decode(fromApi.stderr));
      const written = (await get(a.name)).status;
      assert.deepEqual(JSON.parse(new TextDecoder().decode(fromApi.stdout)), written);
    });

    await t.step("pull secret: missing → Degraded, write, rotate, remove", async () => {
      const authRepo = `${authRegistry!.host}/os`;
      const [p1, p2] = await Promise.all([
        authRegistry!.pushImage({ repository: "os", tag: "v1", version: "1" }),
        authRegistry!.pushImage({ repository: "os", tag: "v2", version: "2" }),
      ]);
      const alice = JSON.parse(authRegistry!.dockerConfigJson("alice"));
      const host = await SimulatedHost.create({
        image: `${authRepo}@${p1.digest}`,
        etcAuth: alice,
      });
      // Only the operator's credentials remain.
      await Deno.remove(`${host.root}/etc/ostree/auth.json`);
      const b: Node = { name: "node-b", host };
      nodes.push(b);
      const ref = { name: "regcred", namespace: NAMESPACE };
      await bootcNodes.create({
        apiVersion: "node.bootc.dev/v1alpha1",
        kind: "BootcNode",
        metadata: { name: b.name, ownerReferences },
        spec: {
          desiredImage: `${authRepo}@${p2.digest}`,
          desiredImageState: "Staged",
          rebootPolicy: "RebootOnly",
          pullSecretRef: ref,
          pullSecretHash: "h1",
        },
      });
      start(b, ["--poll-interval", "1s"]);
      let n = await waitForNode(
        b,
        (n) => findCondition(n.status?.conditions, "Degraded")?.status === "True",
        "Degraded for the missing Secret",
      );
      assert.match(
        findCondition(n.status?.conditions, "Degraded")!.message,
        /pull secret bootc-operator\/regcred: Secret not found/,
      );
      const secret = (user: string): ISecret => ({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "regcred", namespace: NAMESPACE },
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": btoa(authRegistry!.dockerConfigJson(user)) },
      });
      await secrets.create(secret("alice"));
      await setSpec(b, { pullSecretHash: "h2" });
      n = await waitForNode(
        b,
        (n) =>
          condition(n, "Idle") === "False/Staged" && condition(n, "Degraded") === "False/Healthy",
        "Staged with the Secret's credentials",
      );
      const authFile = `${host.root}/run/ostree/auth.json`;
      assert.deepEqual(JSON.parse(await Deno.readTextFile(authFile)), alice);
      assert.equal((await Deno.stat(authFile)).mode! & 0o777, 0o600);
      // Rotation: new content, the controller bumps the hash.
      const current = await secrets.get("regcred");
      await secrets.update({ ...current, data: secret("bob").data });
      await setSpec(b, { pullSecretHash: "h3" });
      const bob = JSON.parse(authRegistry!.dockerConfigJson("bob"));
      await waitFor(async () => {
        const text = await Deno.readTextFile(authFile).catch(() => "");
        return text && JSON.stringify(JSON.parse(text)) === JSON.stringify(bob);
      }, { timeoutMs: 30_000, message: () => `rotated auth file\n${b.daemon?.tail()}` });
      // The reference goes away: the file is removed.
      await setSpec(b, { pullSecretRef: null, pullSecretHash: null });
      await waitFor(
        async () => !(await Deno.stat(authFile).then(() => true, () => false)),
        { timeoutMs: 30_000, message: () => `auth file removed\n${b.daemon?.tail()}` },
      );
    });

    await t.step("not a bootc host (container detected): Degraded, nothing staged", async () => {
      const c = await newNode("node-c", v1, {});
      await c.host.setInContainer(true);
      await setSpec(c, { desiredImage: v2 });
      // The daemon drops `container` from bootc's environment; the marker file is what is seen.
      start(c);
      const n = await waitForNode(
        c,
        (n) => condition(n, "Degraded") === "True/Error",
        "Degraded for booted: null",
      );
      assert.match(findCondition(n.status?.conditions, "Degraded")!.message, /booted: null/);
      assert.equal((await c.host.readState()).state.staged, null);
      await c.daemon!.stop("SIGKILL");
      c.daemon = undefined;
    });

    // Issue 12: the spec alone never reboots a node. node-g is staged; Booted is set by hand.
    const g = await newNode("node-g", v1, { desiredImage: v2 });
    /** Waits until the daemon has read its Node `n` more times (each re-check is one GET). */
    const nodeReads = async () => (await apiMetrics(api)).requests.get("nodes|GET") ?? 0;
    const waitNodeReads = async (node: Node, n: number) => {
      const start = await nodeReads();
      await waitFor(async () => (await nodeReads()) - start >= n, {
        timeoutMs: 60_000,
        intervalMs: 500,
        message: () => `${n} re-checks of the Node\n${node.daemon?.tail()}`,
      });
    };
    const assertNotApplied = async (node: Node, image: string) => {
      const { state } = await node.host.readState();
      assert.equal(state.rebootRequest, null, "no reboot was requested");
      assert.equal(state.staged?.pullspec, image);
      assert.equal(state.staged?.downloadOnly, true, "the image stays staged, locked");
    };

    await t.step(
      "(a) Booted by hand, no reboot slot on the Node: never applied, RebootAllowed False/NoRebootSlot, event",
      async () => {
        start(g);
        await waitForNode(g, (n) => condition(n, "Idle") === "False/Staged", "Staged");
        await setSpec(g, { desiredImageState: "Booted" });
        const n = await waitForNode(
          g,
          (n) => condition(n, "RebootAllowed") === "False/NoRebootSlot",
          "RebootAllowed False/NoRebootSlot",
        );
        assert.equal(condition(n, "Idle"), "False/Staged");
        assert.match(
          findCondition(n.status?.conditions, "RebootAllowed")!.message,
          /no reboot slot/,
        );
        const refused = await waitFor(async () => {
          const list = await eventsOf(g, "RebootRefused");
          return list.length > 0 ? list : undefined;
        }, { timeoutMs: 30_000, message: "a RebootRefused event" });
        assert.equal(refused[0].type, "Warning");
        assert.match(refused[0].message, /^NoRebootSlot: /);
        assert.equal(refused[0].source.component, "bootc-operator-daemon");
        // The daemon keeps re-checking its Node (polls every 3 s): still nothing applied.
        await waitNodeReads(g, 3);
        await assertNotApplied(g, v2);
        assert.equal(condition(await get(g.name), "Idle"), "False/Staged");
      },
    );

    await t.step(
      "(b) slot and cordon but no finished drain: AwaitingDrain, not applied",
      async () => {
        await grantSlot(g);
        const n = await waitForNode(
          g,
          (n) => condition(n, "RebootAllowed") === "False/AwaitingDrain",
          "RebootAllowed False/AwaitingDrain",
        );
        assert.equal(condition(n, "Idle"), "False/Staged");
        await waitFor(
          async () =>
            (await eventsOf(g, "RebootRefused")).some((e) => /^AwaitingDrain: /.test(e.message)),
          {
            timeoutMs: 30_000,
            message: "a RebootRefused event for AwaitingDrain",
          },
        );
        // A drain recorded for another image does not count either.
        await coreNodes.patch(g.name, {
          metadata: {
            annotations: {
              [ANNOTATION_DRAINED_AT]: "2026-01-01T00:00:00Z",
              [ANNOTATION_DRAINED_FOR]: v3,
            },
          },
        }, { type: "merge" });
        await waitForNode(
          g,
          (n) =>
            /drain was for/.test(
              findCondition(n.status?.conditions, "RebootAllowed")?.message ?? "",
            ),
          "AwaitingDrain naming the other image",
        );
        await waitNodeReads(g, 2);
        await assertNotApplied(g, v2);
      },
    );

    await t.step("(c) slot, cordon and drain finished for this image: applied", async () => {
      await grantSlot(g, v2);
      const request = await g.host.waitForRebootRequest({ timeoutMs: 60_000 });
      assert.deepEqual(request.command.slice(-3), ["switch", "--from-downloaded", "--apply"]);
      const n = await get(g.name);
      assert.equal(condition(n, "Idle"), "False/Rebooting");
      assert.equal(condition(n, "RebootAllowed"), "True/SlotAndDrain");
      await waitFor(async () => (await eventsOf(g, "Rebooting")).length === 1, {
        timeoutMs: 30_000,
        message: "a Rebooting event",
      });
      await reboot(g);
      const after = await waitForNode(g, (n) => condition(n, "Idle") === "True/Idle", "Idle");
      assert.equal(after.status?.booted?.image, v2);
      await g.daemon!.stop("SIGKILL");
      g.daemon = undefined;
    });

    await t.step(
      "(d) a hand-created BootcNode (no owner): nothing staged, Idle NotOwned, until a pool adopts it",
      async () => {
        const u = await newNode("node-u", v1, { desiredImage: v2 }, { owned: false });
        start(u);
        let n = await waitForNode(
          u,
          (n) => condition(n, "Idle") === "True/NotOwned" && n.status?.autoUpdatesDisabled === true,
          "Idle True/NotOwned",
        );
        assert.match(
          findCondition(n.status?.conditions, "Idle")!.message,
          /not controlled by a BootcNodePool/,
        );
        // Even Booted with a Node that looks authorized changes nothing: the spec is not the controller's.
        await grantSlot(u, v2);
        await setSpec(u, { desiredImageState: "Booted" });
        const generation = (await get(u.name)).metadata.generation;
        n = await waitForNode(
          u,
          (n) =>
            n.status?.observedGeneration === generation &&
            condition(n, "RebootAllowed") === "False/NotOwned",
          "the new spec observed, RebootAllowed False/NotOwned",
        );
        assert.equal(condition(n, "Idle"), "True/NotOwned");
        const { state } = await u.host.readState();
        assert.equal(state.staged, null, "nothing staged");
        assert.equal(state.rebootRequest, null);
        // A pool adopts it (metadata only), the controller's spec: the daemon starts working.
        await release(u);
        await bootcNodes.patch(u.name, { metadata: { ownerReferences } }, { type: "merge" });
        n = await waitForNode(
          u,
          (n) => condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v2,
          "Staged once owned",
        );
        assert.equal(condition(n, "RebootAllowed"), "False/NotRequested");
      },
    );

    // Issue 14: the host's health, checked with the host's systemctl (the simulator's).
    await t.step(
      "host health: Starting before the first write, Healthy on the timer, a failed unit is Unhealthy (event), recovery; idle checks make no API request",
      async () => {
        const hh = await newNode("node-h", v1);
        // systemd says `starting` (until the test lets the boot finish below).
        await hh.host.setStartingMs(3_600_000);
        // No poll to speak of: what follows is seen by the health timer alone.
        start(hh, ["--health-interval", "1s", "--poll-interval", "10m"]);
        let n = await waitForNode(hh, (n) => n.status?.hostHealth !== undefined, "hostHealth");
        const first = n.status!.hostHealth!;
        // The first write of this daemon already carries the check, on the booted digest.
        assert.equal(first.bootedDigest, n.status?.booted?.imageDigest);
        assert.ok(first.bootedDigest?.startsWith("sha256:"));
        assert.equal(first.state, "Starting", JSON.stringify(first));
        assert.equal(condition(n, "HostHealthy"), "Unknown/Starting");
        await hh.host.setStartingMs(0); // the boot finishes: systemd says running
        n = await waitForNode(
          hh,
          (n) => n.status?.hostHealth?.state === "Healthy",
          "Healthy once systemd says running",
        );
        assert.equal(condition(n, "HostHealthy"), "True/SystemRunning");
        assert.equal(n.status?.hostHealth?.message, "systemctl is-system-running: running");

        // Idle, healthy, checked every second: no request to the API server at all.
        await new Promise((r) => setTimeout(r, 2_000));
        const writesLogged = () =>
          hh.daemon!.log.filter((l) => l.includes('"msg":"status changed"')).length;
        const writesBefore = writesLogged();
        const before = await apiMetrics(api);
        await new Promise((r) => setTimeout(r, 6_000));
        const after = await apiMetrics(api);
        const delta = (key: string) =>
          (after.requests.get(key) ?? 0) - (before.requests.get(key) ?? 0);
        for (const key of ["PATCH", "PUT", "GET", "LIST", "POST"]) {
          assert.equal(delta(`bootcnodes|${key}`), 0, `bootcnodes ${key} while idle`);
        }
        assert.equal(delta("nodes|GET"), 0);
        assert.equal(delta("events|POST") + delta("events|PATCH"), 0);
        assert.equal(writesLogged(), writesBefore, "no status write while idle");

        // A unit crashes: Unhealthy, naming it, with an event.
        await hh.host.failUnit("app.service");
        n = await waitForNode(
          hh,
          (n) => n.status?.hostHealth?.state === "Unhealthy",
          "Unhealthy after a unit failed",
        );
        assert.deepEqual(n.status?.hostHealth?.failedUnits, ["app.service"]);
        assert.equal(condition(n, "HostHealthy"), "False/UnitFailed");
        assert.match(
          findCondition(n.status?.conditions, "HostHealthy")!.message,
          /degraded: failed units: app\.service/,
        );
        const unhealthy = await waitFor(async () => {
          const list = await eventsOf(hh, "HostUnhealthy");
          return list.length > 0 ? list : undefined;
        }, { timeoutMs: 30_000, message: "a HostUnhealthy event" });
        assert.equal(unhealthy[0].type, "Warning");
        assert.match(unhealthy[0].message, /app\.service/);

        // The admin resets it: Healthy again, and a recovery event.
        const { units } = await hh.host.readState();
        const { failed: _failed, ...rest } = units["app.service"];
        await hh.host.setUnits({ ...units, "app.service": { ...rest, active: true } });
        await waitForNode(hh, (n) => n.status?.hostHealth?.state === "Healthy", "Healthy again");
        await waitFor(async () => (await eventsOf(hh, "HostRecovered")).length === 1, {
          timeoutMs: 30_000,
          message: "a HostRecovered event",
        });

        // healthUnits (copied from the pool by the controller): systemctl is-active decides.
        await setSpec(hh, { healthUnits: ["app.service", "db.service"] });
        n = await waitForNode(
          hh,
          (n) => n.status?.hostHealth?.state === "Starting",
          "Starting while db.service is inactive",
        );
        assert.match(n.status!.hostHealth!.message!, /db\.service \(inactive\)/);
        const now = (await hh.host.readState()).units;
        await hh.host.setUnits({
          ...now,
          "db.service": { enabled: true, active: true, masked: false, runtimeMasked: false },
        });
        n = await waitForNode(
          hh,
          (n) => condition(n, "HostHealthy") === "True/UnitsActive",
          "UnitsActive",
        );
        assert.equal(n.status?.hostHealth?.state, "Healthy");
        await hh.daemon!.stop("SIGKILL");
        hh.daemon = undefined;
      },
    );

    // Issue 14: a node is rolled back by setting desiredImage to its previous image, which is
    // the host's rollback deployment; the daemon boots it only with the reboot authorization.
    await t.step(
      "rollback route: desiredImage = the rollback deployment → ready without staging; Booted without a slot refused; with slot + drain bootc rollback --apply; Idle on the previous image",
      async () => {
        const r = await newNode("node-r", v1, { desiredImage: v2 });
        start(r);
        await waitForNode(r, (n) => condition(n, "Idle") === "False/Staged", "Staged v2");
        await grantSlot(r, v2);
        await setSpec(r, { desiredImageState: "Booted" });
        await r.host.waitForRebootRequest({ timeoutMs: 60_000 });
        await reboot(r);
        let n = await waitForNode(
          r,
          (n) => condition(n, "Idle") === "True/Idle" && n.status?.booted?.image === v2,
          "Idle on v2",
        );
        assert.equal(n.status?.rollback?.image, v1);
        assert.equal(condition(n, "Rebooted"), "True/Rebooted");
        await release(r);

        // The controller rolls the node back: desiredImage = v1 (the rollback deployment).
        await setSpec(r, { desiredImage: v1 });
        n = await waitForNode(
          r,
          (n) =>
            condition(n, "Idle") === "False/Staged" &&
            condition(n, "ImageStaged") === "True/RollbackDeployment",
          "ready to roll back, nothing staged",
        );
        assert.match(findCondition(n.status?.conditions, "Idle")!.message, /rollback deployment/);
        assert.equal(condition(n, "Rebooted"), "False/Waiting", "phases start over");
        assert.equal(condition(n, "Cordoned"), "False/Waiting");
        let { state } = await r.host.readState();
        assert.equal(state.staged, null, "nothing staged");
        assert.equal(state.rollbackQueued, false, "no rollback queued without --apply");
        assert.equal(state.rebootRequest, null);

        // Booted without a reboot slot: refused, nothing run.
        await setSpec(r, { desiredImageState: "Booted" });
        n = await waitForNode(
          r,
          (n) => condition(n, "RebootAllowed") === "False/NoRebootSlot",
          "refused without a slot",
        );
        assert.equal(condition(n, "Idle"), "False/Staged");
        await waitNodeReads(r, 2);
        ({ state } = await r.host.readState());
        assert.equal(state.rollbackQueued, false);
        assert.equal(state.rebootRequest, null);
        assert.equal(state.booted?.pullspec, v2);

        // Slot, cordon and a finished drain for v1: bootc rollback --apply, Rebooting first.
        await grantSlot(r, v1);
        const request = await r.host.waitForRebootRequest({ timeoutMs: 60_000 });
        assert.deepEqual(request.command.slice(1), ["rollback", "--apply"]);
        n = await get(r.name);
        assert.equal(condition(n, "Idle"), "False/Rebooting", "persisted before the reboot");
        assert.equal(condition(n, "RebootAllowed"), "True/SlotAndDrain");
        assert.equal(condition(n, "Rebooted"), "False/RollingBack");
        assert.equal(condition(n, "Cordoned"), "True/Cordoned");
        assert.equal(condition(n, "Drained"), "True/Drained");
        const rolling = await waitFor(async () => {
          const list = await eventsOf(r, "RollingBack");
          return list.length > 0 ? list : undefined;
        }, { timeoutMs: 30_000, message: "a RollingBack event" });
        assert.match(rolling[0].message, /^Rolling back to .* \(the rollback deployment\)/);

        await reboot(r);
        n = await waitForNode(
          r,
          (n) => condition(n, "Idle") === "True/Idle" && n.status?.booted?.image === v1,
          "Idle on v1 after the rollback",
        );
        assert.equal(n.status?.rollback?.image, v2, "status mirrors the host after the reboot");
        assert.equal(n.status?.staged, undefined);
        assert.equal(condition(n, "Rebooted"), "True/Rebooted");
        assert.equal(condition(n, "Degraded"), "False/Healthy", "a rollback is not a fall-back");
        await r.daemon!.stop("SIGKILL");
        r.daemon = undefined;
      },
    );

    // Issue 14 with the simulator's bad images (OCI label dev.bootc.sim.bad-boot).
    await t.step(
      "bad images: a fall-back is Degraded naming both images and not re-applied; a failing unit after the reboot is Unhealthy on the new boot; rolled back to the previous image, healthy again",
      async () => {
        const [fallsBack, unitFails] = await Promise.all([
          registry!.pushImage({
            repository: "os",
            version: "9",
            labels: { "dev.bootc.sim.bad-boot": "falls-back" },
          }),
          registry!.pushImage({
            repository: "os",
            version: "8",
            labels: { "dev.bootc.sim.bad-boot": "unit-fails:app.service" },
          }),
        ]);
        const vFall = `${repo}@${fallsBack.digest}`;
        const vUnit = `${repo}@${unitFails.digest}`;
        const f = await newNode("node-f", v1, { desiredImage: vFall });
        start(f);
        await waitForNode(f, (n) => condition(n, "Idle") === "False/Staged", "Staged");
        await grantSlot(f, vFall);
        await setSpec(f, { desiredImageState: "Booted" });
        await f.host.waitForRebootRequest({ timeoutMs: 60_000 });
        await reboot(f); // boots vFall, which fails: the bootloader goes back to v1

        let n = await waitForNode(
          f,
          (n) => condition(n, "Degraded") === "True/Error",
          "Degraded after the fall-back",
        );
        const degraded = findCondition(n.status?.conditions, "Degraded")!.message;
        assert.ok(
          degraded.includes(
            `booted ${shortReference(vFall)} but the host fell back to ${shortReference(v1)}`,
          ),
          degraded,
        );
        assert.equal(condition(n, "Rebooted"), "False/FellBack");
        // The status mirrors the host at once: the controller detects the fall-back from it.
        assert.equal(n.status?.booted?.image, v1);
        assert.equal(n.status?.rollback?.image, vFall);
        assert.equal(n.status?.staged, undefined);
        // The Node still authorizes vFall and vFall is the rollback deployment: nothing is run.
        await setSpec(f, { rebootPolicy: "AllowSoftReboot" }); // any spec change: a reconcile
        const generation = (await get(f.name)).metadata.generation;
        n = await waitForNode(
          f,
          (n) => n.status?.observedGeneration === generation,
          "the spec change observed",
        );
        assert.equal(condition(n, "Degraded"), "True/Error");
        assert.equal((await f.host.readState()).state.rebootRequest, null, "no loop");

        // The controller gives up on vFall (RollbackNode: back to the booted image).
        await release(f);
        await setSpec(f, { desiredImage: v1, rebootPolicy: "RebootOnly" });
        n = await waitForNode(
          f,
          (n) =>
            condition(n, "Idle") === "True/Idle" && condition(n, "Degraded") === "False/Healthy",
          "Idle and healthy on v1",
        );
        assert.equal(condition(n, "Rebooted"), "True/AlreadyBooted");

        // vUnit boots, but app.service fails on it: Unhealthy, on vUnit's boot.
        await setSpec(f, { desiredImage: vUnit });
        await waitForNode(f, (n) => condition(n, "Idle") === "False/Staged", "Staged vUnit");
        await grantSlot(f, vUnit);
        await setSpec(f, { desiredImageState: "Booted" });
        await f.host.waitForRebootRequest({ timeoutMs: 60_000 });
        await reboot(f);
        n = await waitForNode(
          f,
          (n) => n.status?.booted?.image === vUnit && n.status?.hostHealth?.state === "Unhealthy",
          "Unhealthy on vUnit",
        );
        assert.equal(n.status?.hostHealth?.bootedDigest, unitFails.digest);
        assert.deepEqual(n.status?.hostHealth?.failedUnits, ["app.service"]);
        assert.equal(condition(n, "Rebooted"), "True/Rebooted");
        assert.equal(condition(n, "HostHealthy"), "False/UnitFailed");
        await waitFor(
          async () =>
            (await eventsOf(f, "HostUnhealthy")).some((e) => e.message.includes("app.service")),
          { timeoutMs: 30_000, message: "a HostUnhealthy event naming app.service" },
        );

        // The controller rolls the node back to v1, the rollback deployment.
        await release(f);
        await setSpec(f, { desiredImage: v1 });
        await waitForNode(
          f,
          (n) => condition(n, "ImageStaged") === "True/RollbackDeployment",
          "ready to roll back",
        );
        await grantSlot(f, v1);
        await setSpec(f, { desiredImageState: "Booted" });
        const request = await f.host.waitForRebootRequest({ timeoutMs: 60_000 });
        assert.deepEqual(request.command.slice(1), ["rollback", "--apply"]);
        await reboot(f);
        n = await waitForNode(
          f,
          (n) => n.status?.booted?.image === v1 && n.status?.hostHealth?.state === "Healthy",
          "healthy on v1 again",
        );
        assert.equal(n.status?.hostHealth?.bootedDigest, pushed[0].digest);
        assert.equal(condition(n, "Idle"), "True/Idle");
        await waitFor(async () => (await eventsOf(f, "HostRecovered")).length >= 1, {
          timeoutMs: 30_000,
          message: "a HostRecovered event",
        });
        await f.daemon!.stop("SIGKILL");
        f.daemon = undefined;
      },
    );
  } finally {
    for (const node of nodes) {
      await node.daemon?.stop("SIGKILL");
      await node.host.killLockHolder().catch(() => null);
      await node.host.destroy();
    }
    await Promise.all([cp?.stop(), registry?.stop(), authRegistry?.stop()]);
  }
});

/** apiserver_request_total by `resource|verb` (every resource), and open WATCHes on bootcnodes. */
async function apiMetrics(
  cp: ControlPlane,
): Promise<{ requests: Map<string, number>; watches: number }> {
  const res = await cp.client.transport.request({ method: "GET", path: "/metrics" });
  const text = await res.text();
  const requests = new Map<string, number>();
  let watches = 0;
  for (const line of text.split("\n")) {
    const m = /^(\w+)\{(.*)\} ([0-9.e+]+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries(
      [...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (m[1] === "apiserver_request_total" && labels.resource) {
      const key = `${labels.resource}|${labels.verb}`;
      requests.set(key, (requests.get(key) ?? 0) + Number(m[3]));
    }
    if (labels.resource !== "bootcnodes") continue;
    if (m[1] === "apiserver_longrunning_requests" && labels.verb === "WATCH") {
      watches += Number(m[3]);
    }
  }
  return { requests, watches };
}

async function rssKiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
}
