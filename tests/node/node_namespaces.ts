/**
 * The namespaces a real test node lives in, so that it is a host of its own on this machine:
 * - **pid**: the node's PID 1 is `node-init` (tests/node/pause.c); containerd, the kubelet, the
 *   shims and every container run below it, so a hostPID pod sees the node's processes and
 *   `/proc/1` is the node's init (the daemon enters the host through `/proc/1/ns/mnt`). When the
 *   init dies the kernel kills everything in the namespace: no process outlives stop().
 * - **mount** (private propagation): the node's own `/run`, `/var/log` and `/var/lib/cni` (tmpfs),
 *   so the shims' sockets, the kubelet's `/var/log/containers` links and CNI's cache stay inside;
 *   the overlay and volume mounts vanish with the namespace. The filesystem below is this
 *   machine's (the node's folder in /tmp, the binaries, the Deno cache).
 * - **network**: loopback only, holding {@linkcode NODE_IP} and {@linkcode SERVICE_IP}; pods join
 *   through the CNI bridge. {@linkcode NodeNamespaces.forward} carries a TCP port between this
 *   machine's loopback and the node's network through a Unix socket (socat on both ends), which is
 *   how the kubelet reaches the API server, the API server reaches the kubelet, and pods reach the
 *   API server through the `kubernetes` Service without a kube-proxy.
 *
 * @module
 */

import type { CommandResult } from "../harness/control_plane.ts";
import { type ManagedProcess, startProcess } from "../harness/process.ts";
import { waitFor } from "../harness/wait.ts";
import { pidsNaming } from "./host_sweep.ts";
import { NODE_IP, SERVICE_IP } from "./real_node_config.ts";

/** The node's namespaces, held by its init. */
export interface NodeNamespaces {
  /** The node's init as this machine sees it (its PID 1 inside). */
  readonly initPid: number;
  /** Runs `argv` inside the node's mount and network namespaces (never throws on an exit code). */
  run(argv: string[]): Promise<CommandResult>;
  /** `argv` prefixed to run a long-lived process inside every namespace of the node. */
  enterArgs(argv: string[]): { command: string; args: string[] };
  /**
   * Carries TCP connections from `listen` in one network to `connect` in the other: `"node"`
   * listens inside the node (connects out to this machine), `"machine"` the other way round.
   */
  forward(options: {
    name: string;
    listenIn: "node" | "machine";
    listen: { host: string; port: number };
    connect: { host: string; port: number };
  }): Promise<void>;
  /** Kills the forwarders and the node's init (and so every process of the node). */
  stop(): Promise<void>;
}

/** Runs a command to its end (never throws on an exit code); 60 s unless `timeoutMs`. */
export async function runCommand(
  command: string,
  args: string[],
  timeoutMs = 60_000,
): Promise<CommandResult> {
  const out = await new Deno.Command(command, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

/** The first child of `pid` (unshare --fork's child, the node's init). */
async function childOf(pid: number): Promise<number | undefined> {
  const text = await Deno.readTextFile(`/proc/${pid}/task/${pid}/children`).catch(() => "");
  const first = Number(text.trim().split(/\s+/)[0]);
  return first > 0 ? first : undefined;
}

/** The node's mounts and addresses, made once inside its namespaces. */
const SETUP_SCRIPT = `set -e
ip link set lo up
ip addr add ${NODE_IP}/32 dev lo
ip addr add ${SERVICE_IP}/32 dev lo
mount -t tmpfs -o mode=0755 bootc-node-run /run
mount -t tmpfs -o mode=0755 bootc-node-log /var/log
if [ -d /var/lib/cni ]; then mount -t tmpfs -o mode=0755 bootc-node-cni /var/lib/cni; fi
`;

/**
 * Starts the node's init in new pid, mount and network namespaces and sets them up. `/var/lib/cni`
 * must exist beforehand to be private (the caller creates it and removes it when it made it).
 */
export async function startNodeNamespaces(
  options: { initPath: string; dir: string; logDir: string },
): Promise<NodeNamespaces> {
  const holder = startProcess({
    name: "node-init",
    command: "unshare",
    args: [
      "--pid",
      "--fork",
      "--kill-child=SIGKILL",
      "--mount-proc",
      "--mount",
      "--net",
      "--propagation",
      "private",
      options.initPath,
    ],
    logPath: `${options.logDir}/node-init.log`,
  });
  const forwarders: ManagedProcess[] = [];
  let initPid = 0;
  const stop = async () => {
    // A power cut: the init first (the kernel then kills the rest of its pid namespace; unshare
    // itself blocks SIGTERM, so the init is signalled directly), then the forwarders and the
    // children they forked per connection, which outlive their parent.
    if (initPid) {
      try {
        Deno.kill(initPid, "SIGKILL");
      } catch { /* already gone */ }
    }
    await holder.stop({ graceMs: 5000 });
    await Promise.all(forwarders.map((f) => f.stop({ graceMs: 1000 })));
    forwarders.length = 0;
    for (const pid of await pidsNaming(`${options.dir}/forward-`)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    }
  };
  try {
    await waitFor(async () => {
      const pid = await childOf(holder.pid);
      if (!pid) return false;
      const [ours, its] = await Promise.all([
        Deno.readLink("/proc/self/ns/pid"),
        Deno.readLink(`/proc/${pid}/ns/pid`).catch(() => ""),
      ]);
      if (!its || its === ours) return false;
      initPid = pid;
      return true;
    }, { timeoutMs: 10_000, intervalMs: 20, message: "unshare to start the node's init" });
    const setup = await runCommand("nsenter", [
      `--target=${initPid}`,
      "--mount",
      "--net",
      "--",
      "sh",
      "-c",
      SETUP_SCRIPT,
    ]);
    if (setup.code !== 0) throw new Error(`node namespace setup failed: ${setup.stderr}`);
  } catch (e) {
    await stop();
    throw e;
  }
  const enter = (pid: boolean) => [
    `--target=${initPid}`,
    "--mount",
    "--net",
    ...(pid ? ["--pid"] : []),
    "--",
  ];
  return {
    initPid,
    run: (argv) => runCommand("nsenter", [...enter(false), ...argv]),
    enterArgs: (argv) => ({ command: "nsenter", args: [...enter(true), ...argv] }),
    async forward({ name, listenIn, listen, connect }) {
      const socket = `${options.dir}/forward-${name}.sock`;
      const tcpListen = `TCP-LISTEN:${listen.port},bind=${listen.host},fork,reuseaddr`;
      const inNode = (argv: string[]) => ["nsenter", `--target=${initPid}`, "--net", "--", ...argv];
      // The connecting side listens on the Unix socket; the listening side connects to it.
      const far = [
        "socat",
        `UNIX-LISTEN:${socket},fork,unlink-early`,
        `TCP:${connect.host}:${connect.port}`,
      ];
      const near = ["socat", tcpListen, `UNIX-CONNECT:${socket}`];
      const [farArgv, nearArgv] = listenIn === "node" ? [far, inNode(near)] : [inNode(far), near];
      for (const [suffix, argv] of [["far", farArgv], ["near", nearArgv]] as const) {
        forwarders.push(startProcess({
          name: `forward-${name}-${suffix}`,
          command: argv[0],
          args: argv.slice(1),
          logPath: `${options.logDir}/forward-${name}-${suffix}.log`,
        }));
        if (suffix === "far") {
          await waitFor(() => Deno.stat(socket).then(() => true, () => false), {
            timeoutMs: 10_000,
            intervalMs: 20,
            message: `socat to listen on ${socket}`,
          });
        }
      }
    },
    stop,
  };
}
