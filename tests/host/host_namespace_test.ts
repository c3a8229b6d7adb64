/**
 * The daemon outside the host's mount namespace, for real: a "host" mount
 * namespace (`unshare --mount`) holds the simulated bootc's machine and the
 * host's files, the daemon runs in the test's own namespace, detects that it is
 * not the host's (it is told the host's PID, as PID 1 is in a pod) and reaches
 * the host only through `nsenter --mount=/proc/PID/ns/mnt` and
 * `/proc/PID/root`.
 *
 * Inside the namespace the host's root `H` is a bind mount of the simulator's
 * directory, with fresh tmpfs mounts on `H/run` (like a real host's /run) and
 * `H/sysroot` (where bootc touches `/ostree/bootc`). From the daemon's
 * namespace `H` is an empty directory, and what is written to `H/run` or
 * `H/sysroot` inside the namespace is visible nowhere outside it. So a bootc
 * command that ran outside the namespace finds no host at all, an auth file
 * written outside it is never seen by bootc, and a watch outside it watches
 * nothing.
 *
 * The host's credentials are only the pull Secret the daemon installs (the
 * registry requires them), and the daemon polls once an hour: staging proves
 * the auth file reached the namespace, a reaction within seconds to a change
 * made inside the namespace proves the watch.
 */
import assert from "node:assert/strict";
import type { ISecret } from "kubernetes-models/v1/Secret";
import { type BootcNode, type BootcNodePool, findCondition } from "../../lib/api/mod.ts";
import type { CoreEvent } from "../../lib/kube/events.ts";
import { Resources } from "../../lib/kube/resources.ts";
import type { KubeObject, ResourceClient } from "../../lib/kube/types.ts";
import { SimulatedHost } from "../bootc_sim/mod.ts";
import type { ControlPlane } from "../harness/control_plane.ts";
import { startCrdApiServer } from "../harness/crd_api_server.ts";
import { startRegistry, type TestRegistry } from "../harness/registry.ts";
import { waitFor } from "../harness/wait.ts";

const MAIN = new URL("../../daemon/main.ts", import.meta.url).pathname;
const NAMESPACE = "bootc-operator";
const POOL = "workers";
const NODE = "ns-node";

/** A child process whose stderr lines are kept (JSON logs of the daemon). */
class Child {
  readonly child: Deno.ChildProcess;
  readonly log: string[] = [];
  readonly #done: Promise<void>;

  constructor(command: string, args: string[]) {
    const child = new Deno.Command(command, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.child = child;
    this.#done = (async () => {
      let buffer = "";
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        this.log.push(...lines);
      }
      if (buffer) this.log.push(buffer);
    })();
  }

  get pid(): number {
    return this.child.pid;
  }

  /** The parsed JSON log lines with this `msg`. */
  logged(msg: string): Record<string, unknown>[] {
    return this.log.flatMap((line) => {
      try {
        const entry = JSON.parse(line);
        return entry.msg === msg ? [entry] : [];
      } catch {
        return [];
      }
    });
  }

  tail(n = 30): string {
    return this.log.slice(-n).join("\n");
  }

  async stop(): Promise<Deno.CommandStatus> {
    try {
      this.child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    const status = await this.child.status;
    await this.#done;
    return status;
  }
}

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

type CoreNode = KubeObject;

Deno.test({
  name: "daemon outside the host's mount namespace: bootc, auth file and watch act in the host's",
  sanitizeOps: true,
  sanitizeResources: true,
}, async (t) => {
  let cp: ControlPlane | undefined;
  let registry: TestRegistry | undefined;
  let host: SimulatedHost | undefined;
  let hostView: string | undefined;
  let ns: Child | undefined;
  let daemon: Child | undefined;
  try {
    [cp, registry] = await Promise.all([
      startCrdApiServer(),
      startRegistry({ auth: "htpasswd", users: { alice: "a-secret" } }),
    ]);
    await cp.createNamespace(NAMESPACE);
    const api = cp;
    const bootcNodes: ResourceClient<BootcNode> = cp.client.resource(Resources.bootcNodes);
    const pools: ResourceClient<BootcNodePool> = cp.client.resource(Resources.bootcNodePools);
    const secrets: ResourceClient<ISecret> = cp.client.resource(Resources.secrets, NAMESPACE);
    const events: ResourceClient<CoreEvent> = cp.client.resource(Resources.events, "default");
    const pool = await pools.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNodePool",
      metadata: { name: POOL },
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
    const [p1, p2] = await Promise.all(
      ["1", "2"].map((v) => registry!.pushImage({ repository: "os", tag: `v${v}`, version: v })),
    );
    const v1 = `${registry.host}/os@${p1.digest}`;
    const v2 = `${registry.host}/os@${p2.digest}`;
    const alice = JSON.parse(registry.dockerConfigJson("alice"));
    await secrets.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "regcred", namespace: NAMESPACE },
      type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": btoa(registry.dockerConfigJson("alice")) },
    });
    await cp.client.resource<CoreNode>(Resources.nodes).create({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: NODE },
    });
    await bootcNodes.create({
      apiVersion: "node.bootc.dev/v1alpha1",
      kind: "BootcNode",
      metadata: {
        name: NODE,
        ownerReferences: [{
          apiVersion: "node.bootc.dev/v1alpha1",
          kind: "BootcNodePool",
          name: POOL,
          uid: pool.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        }],
      },
      spec: {
        desiredImage: v1,
        desiredImageState: "Staged",
        rebootPolicy: "RebootOnly",
        pullSecretRef: { name: "regcred", namespace: NAMESPACE },
        pullSecretHash: "h1",
      },
    });

    // The machine: booted v1 (pulled with credentials that are then taken away: from now on
    // the host can pull only with the auth file the daemon installs).
    host = await SimulatedHost.create({ image: v1, etcAuth: alice });
    await Deno.remove(`${host.root}/etc/ostree/auth.json`);
    const H = hostView = await Deno.makeTempDir({ prefix: "bootc-host-root-" });

    // The host's mount namespace: a process that only holds it.
    ns = new Child("unshare", ["--mount", "--propagation", "private", "sleep", "infinity"]);
    const own = await Deno.readLink("/proc/self/ns/mnt");
    const pid = ns.pid;
    const hostNs = await waitFor(async () => {
      const link = await Deno.readLink(`/proc/${pid}/ns/mnt`).catch(() => undefined);
      return link && link !== own ? link : undefined;
    }, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: () => `unshare --mount made a new mount namespace\n${ns?.tail()}`,
    });
    const inHost = (argv: string[]) =>
      run(["nsenter", `--mount=/proc/${pid}/ns/mnt`, "--", ...argv]);
    const setup = await inHost([
      "sh",
      "-ec",
      `mount --bind "$1" "$2"
       mount -t tmpfs -o mode=0755 host-run "$2/run" && cp -a "$1/run/." "$2/run/"
       mount -t tmpfs -o mode=0755 host-sysroot "$2/sysroot" && cp -a "$1/sysroot/." "$2/sysroot/"`,
      "setup",
      host.root,
      H,
    ]);
    assert.equal(setup.code, 0, `mounts in the host namespace: ${setup.stderr}`);
    const seen = `/proc/${pid}/root${H}`;
    assert.deepEqual([...Deno.readDirSync(H)], [], "the daemon's namespace sees no host at H");
    assert.ok(await exists(`${seen}/.bootc-sim/state.json`), "the host is there inside");

    // bootc and systemctl of the host whose root is H (only inside the namespace).
    const sim = [...host.command().slice(0, -1), H].join(" ");
    assert.equal(host.command().at(-1), host.root);
    const authInside = `${seen}/run/ostree/auth.json`;
    const node = () => bootcNodes.get(NODE);
    const condition = (n: BootcNode, type: string) => {
      const c = findCondition(n.status?.conditions, type);
      return c ? `${c.status}/${c.reason}` : undefined;
    };
    const waitForNode = (check: (n: BootcNode) => boolean, message: string) =>
      waitFor(async () => {
        const n = await node();
        return check(n) ? n : undefined;
      }, {
        timeoutMs: 90_000,
        intervalMs: 200,
        message: () => `${message}\n--- daemon log ---\n${daemon?.tail()}`,
      });
    const eventsOf = async (reason: string) =>
      (await events.list()).items.filter((e) =>
        e.involvedObject.kind === "BootcNode" && e.involvedObject.name === NODE &&
        e.reason === reason
      );
    const hostArgs = [
      "--host-pid",
      String(pid),
      "--host-root",
      seen,
      "--bootc-command",
      sim,
      "--systemctl-command",
      `${sim} systemctl`,
      "--status-timeout",
      "60s",
    ];

    await t.step(
      "the daemon detects another namespace and enters the host's with nsenter",
      async () => {
        daemon = new Child(Deno.execPath(), [
          "run",
          "--allow-all",
          MAIN,
          "run",
          "--kubeconfig",
          api.kubeconfigPath,
          "--node-name",
          NODE,
          ...hostArgs,
          // Only the watch (or the daemon's own commands) can wake it between these polls.
          "--poll-interval",
          "1h",
        ]);
        const n = await waitForNode(
          (n) => condition(n, "Idle") === "True/Idle" && n.status?.autoUpdatesDisabled === true,
          "Idle with the auto-update timer masked",
        );
        assert.equal(condition(n, "Degraded"), "False/Healthy");
        assert.equal(n.status?.booted?.image, v1);
        const [access] = daemon.logged("host access");
        assert.equal(access.mode, "nsenter");
        assert.deepEqual(access.hostExecPrefix, ["nsenter", `--mount=/proc/${pid}/ns/mnt`, "--"]);
        assert.match(String(access.reason), new RegExp(`not PID ${pid}'s ${escape(hostNs)}`));
        // systemctl ran in the host too (its units live with the machine).
        const { units } = await host!.readState();
        assert.equal(units["bootc-fetch-apply-updates.timer"].runtimeMasked, true);
      },
    );

    await t.step(
      "the pull Secret's auth file is written in the host's namespace only",
      async () => {
        await waitFor(async () => await exists(authInside), {
          timeoutMs: 30_000,
          message: () => `auth file in the host\n${daemon?.tail()}`,
        });
        assert.deepEqual(JSON.parse(await Deno.readTextFile(authInside)), alice);
        assert.equal((await Deno.stat(authInside)).mode! & 0o777, 0o600);
        // Nowhere in the daemon's namespace: not at H, not in the machine's directory (the host's
        // /run is a tmpfs of its own).
        assert.equal(await exists(`${H}/run/ostree/auth.json`), false);
        assert.equal(await exists(`${host!.root}/run/ostree/auth.json`), false);
        const written = await waitFor(async () => {
          const list = await eventsOf("AuthFileWritten");
          return list.length ? list : undefined;
        }, { timeoutMs: 30_000, message: "an AuthFileWritten event" });
        assert.equal(written[0].type, "Normal");
        assert.match(
          written[0].message,
          /pull Secret bootc-operator\/regcred .*\/run\/ostree\/auth\.json/,
        );
      },
    );

    await t.step(
      "bootc stages in the host's namespace with the credentials it finds there",
      async () => {
        await bootcNodes.patch(NODE, { spec: { desiredImage: v2 } }, { type: "merge" });
        const n = await waitForNode(
          (n) => condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v2,
          "Staged v2 (pulled with the auth file in the host's /run)",
        );
        assert.equal(n.status?.staged?.downloadOnly, true);
        assert.equal(condition(n, "Degraded"), "False/Healthy");
        const { state } = await host!.readState();
        assert.equal(state.staged?.pullspec, v2);
        assert.equal(state.staged?.downloadOnly, true);
      },
    );

    await t.step("the host's change signal is watched through /proc/PID/root", async () => {
      // Someone on the host switches to another image (unlocked), in the host's namespace.
      const rogue = await inHost([...sim.split(" "), "switch", v1]);
      assert.equal(rogue.code, 0, rogue.stderr);
      const { state } = await host!.readState();
      assert.equal(state.staged?.pullspec, v1);
      assert.equal(state.staged?.downloadOnly, false);
      // The daemon polls once an hour: only the watch can bring it back within the timeout.
      await waitFor(async () => {
        const s = (await host!.readState()).state.staged;
        return s?.pullspec === v2 && s.downloadOnly === true;
      }, {
        timeoutMs: 60_000,
        intervalMs: 200,
        message: () => `re-staged v2 after the change on the host\n${daemon?.tail()}`,
      });
      const n = await waitForNode(
        (n) => condition(n, "Idle") === "False/Staged" && n.status?.staged?.image === v2,
        "Staged v2 again",
      );
      assert.equal(n.status?.staged?.downloadOnly, true);
      // What it watches: the host's directory, reached through the namespace holder's root.
      const watching = daemon!.logged("watching host for bootc changes");
      assert.deepEqual(watching.map((e) => e.path), [`${seen}/sysroot/ostree/bootc`]);
    });

    await t.step("daemon status (one-shot) reads bootc through the namespace", async () => {
      const out = await run([
        Deno.execPath(),
        "run",
        "--allow-all",
        MAIN,
        "status",
        ...hostArgs,
        "--desired-image",
        v2,
      ]);
      assert.equal(out.code, 0, out.stderr);
      const status = JSON.parse(out.stdout);
      assert.equal(status.booted.image, v1);
      assert.equal(status.staged.image, v2);
      assert.match(out.stderr, /"msg":"host access","component":"daemon","mode":"nsenter"/);
    });

    await t.step(
      "removing the pull Secret reference removes the file in the host's namespace",
      async () => {
        await bootcNodes.patch(NODE, { spec: { pullSecretRef: null, pullSecretHash: null } }, {
          type: "merge",
        });
        await waitFor(async () => !(await exists(authInside)), {
          timeoutMs: 30_000,
          message: () => `auth file removed in the host\n${daemon?.tail()}`,
        });
        await waitFor(async () => (await eventsOf("AuthFileRemoved")).length === 1, {
          timeoutMs: 30_000,
          message: "an AuthFileRemoved event",
        });
      },
    );

    await t.step(
      "in the host's own namespace no nsenter is used and no flag is needed",
      async () => {
        await daemon?.stop();
        daemon = undefined;
        const local = [...host!.command()].join(" ");
        const common = [
          Deno.execPath(),
          "run",
          "--allow-all",
          MAIN,
          "status",
          "--bootc-command",
          local,
          "--systemctl-command",
          `${local} systemctl`,
          "--desired-image",
          v2,
        ];
        // A process of this namespace stands for the host: the links are equal.
        const same = await run([...common, "--host-pid", String(Deno.pid)]);
        assert.equal(same.code, 0, same.stderr);
        assert.equal(JSON.parse(same.stdout).booted.image, v1);
        const access = JSON.parse(
          same.stderr.split("\n").find((l) => l.includes('"host access"'))!,
        );
        assert.equal(access.mode, "host");
        assert.deepEqual(access.hostExecPrefix, []);
        assert.equal(access.hostRoot, "/");
        // No namespace flag at all (PID 1): the test runs in the machine's own namespace, where
        // PID 1's link is either equal or, on some machines, unreadable (said as a warning).
        const plain = await run(common);
        assert.equal(plain.code, 0, plain.stderr);
        assert.equal(JSON.parse(plain.stdout).booted.image, v1);
        const auto = JSON.parse(plain.stderr.split("\n").find((l) => l.includes('"host access"'))!);
        assert.ok(["host", "unreadable"].includes(auto.mode), JSON.stringify(auto));
        assert.deepEqual(auto.hostExecPrefix, []);
        if (auto.mode === "unreadable") {
          assert.equal(auto.level, "warn");
          assert.match(auto.reason, /^cannot read \/proc\/1\/ns\/mnt: /);
        }
      },
    );
  } finally {
    await daemon?.stop();
    await host?.killLockHolder().catch(() => null);
    // The namespace (and its mounts) goes with its last process.
    await ns?.stop();
    await host?.destroy();
    if (hostView) await Deno.remove(hostView, { recursive: true }).catch(() => {});
    await Promise.all([cp?.stop(), registry?.stop()]);
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
