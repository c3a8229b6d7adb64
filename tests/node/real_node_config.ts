/**
 * The configuration files of a real test node (tests/node/real_node.ts), as pure renderers: where
 * everything lives (a {@linkcode NodeLayout} under one temp folder, so nothing touches the
 * machine's own containerd or kubelet), containerd's config.toml and the KubeletConfiguration.
 *
 * Relaxations against a production node, each because of what test machines are:
 * - `failCgroupV1: false`: CI machines mount cgroup v1; kubelet ≥ 1.35 refuses v1 by default.
 * - `cgroupDriver: cgroupfs` (and containerd's `SystemdCgroup = false`): no systemd as init here.
 * - `cgroupRoot` is a per-node cgroup, so two nodes (or a leftover) never share `kubepods`, and
 *   stop() can remove exactly what this node created.
 * - `failSwapOn: false`: a test machine may have swap; nothing here depends on memory accounting.
 * - `evictionHard: {}` and image GC at 100 %: the machine's shared disk (and memory) fill up with
 *   other work; pressure would taint the node and evict test pods for reasons not under test.
 * - `authentication.anonymous` + `authorization: AlwaysAllow` on a loopback-only kubelet port:
 *   the test API server has no kubelet client certificate, and `kubectl logs`/`exec` go through it.
 * - `nodeStatusReportFrequency: 2s` (default 5 min): a restarted kubelet's first heartbeat may
 *   fall in the second its predecessor ended, and tests wait for a heartbeat from after that.
 * - containerd's `restrict_oom_score_adj`: CI sandboxes may lack CAP_SYS_RESOURCE, so pods keep
 *   an OOM score no lower than containerd's instead of the sandbox's -998.
 * - The node is a set of namespaces of its own (pid, mount, network; tests/node/real_node.ts), so
 *   its "host network" is a network namespace holding {@linkcode NODE_IP} and the `kubernetes`
 *   Service's address ({@linkcode SERVICE_IP}) on its loopback; the kubelet's `--node-ip` is
 *   NODE_IP (it refuses a loopback address such as 127.0.0.1).
 * - No kube-proxy: the only Service pods reach is `kubernetes`, whose address the node's network
 *   owns; socat carries those connections to the API server on this machine's loopback.
 * - Pod network: the CNI bridge plugin with host-local addresses from {@linkcode POD_SUBNET}, no
 *   masquerading (nothing outside the node is reachable but what socat forwards). Every node has
 *   the same addresses (each in its own network namespace): pods on two nodes do not reach each other.
 * - Images are imported (`ctr images import`), never pulled: the machine has no internet, and
 *   containerd is not told of the test registry.
 * - The machine's kernel is shared: the kubelet's kernel settings are machine-wide (stop() puts
 *   them back once the last node of the process stops), and the node's cgroups sit in the
 *   machine's hierarchies (cgroup v1 only: a cgroup-v2-only machine is not supported yet).
 *
 * @module
 */

/** Where one node's files, sockets and cgroups live. */
export interface NodeLayout {
  /** The node's temp folder; everything below is inside it. */
  dir: string;
  /** Node name (also its kubelet's hostname). */
  name: string;
  /** Folder with kubelet, containerd, ctr, containerd-shim-runc-v2, runc (tests/node/build.sh). */
  binDir: string;
  /** The cgroup (in every v1 hierarchy) holding all of this node's pods, e.g. `/bootc-test-node-x`. */
  cgroupRoot: string;
  /** Loopback port of the kubelet's API. */
  kubeletPort: number;
  /** Image name of the pod sandbox (imported, never pulled). */
  sandboxImage: string;
  /** Where containerd's and the kubelet's logs go (default `<dir>/logs`, removed by stop()). */
  logDir?: string;
}

/** Paths derived from a layout. */
export function nodePaths(layout: NodeLayout) {
  const d = layout.dir;
  return {
    containerdConfig: `${d}/containerd.toml`,
    containerdRoot: `${d}/containerd/root`,
    containerdState: `${d}/containerd/state`,
    containerdSocket: `${d}/containerd.sock`,
    runcRoot: `${d}/runc`,
    cniConfDir: `${d}/cni/conf`,
    kubeletConfig: `${d}/kubelet.json`,
    kubeletKubeconfig: `${d}/kubelet.kubeconfig`,
    kubeletRoot: `${d}/kubelet`,
    kubeletCertDir: `${d}/kubelet-pki`,
    podLogsDir: `${d}/pod-logs`,
    volumePluginDir: `${d}/volume-plugins`,
    logDir: layout.logDir ?? `${d}/logs`,
  };
}

/** The node's own address, on the loopback of its network namespace (InternalIP of the Node). */
export const NODE_IP = "10.243.0.1";
/** The `kubernetes` Service's ClusterIP (the first of the control plane's service range). */
export const SERVICE_IP = "10.0.0.1";
/** Pod addresses of the node (host-local); the bridge takes the first one as the pods' gateway. */
export const POD_SUBNET = "10.244.0.0/24";

/** The CNI network config (a conflist) of the node: a bridge with host-local addresses. */
export function cniConfig(): string {
  return JSON.stringify({
    cniVersion: "1.0.0",
    name: "bootc-test-pods",
    plugins: [{
      type: "bridge",
      bridge: "bootc0",
      isGateway: true,
      ipMasq: false,
      hairpinMode: true,
      ipam: {
        type: "host-local",
        ranges: [[{ subnet: POD_SUBNET }]],
        routes: [{ dst: "0.0.0.0/0" }],
        // The default dataDir, /var/lib/cni/networks: the node's tmpfs, so every boot starts empty.
      },
    }],
  });
}

/** containerd's config.toml (version 3): every path inside the layout's folder. */
export function containerdConfig(layout: NodeLayout): string {
  const p = nodePaths(layout);
  const q = (s: string) => JSON.stringify(s); // TOML basic strings escape like JSON
  return `version = 3
root = ${q(p.containerdRoot)}
state = ${q(p.containerdState)}
# NRI would listen on /var/run/nri; the node needs none of these.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = ${q(p.containerdSocket)}

[ttrpc]
  address = ${q(`${p.containerdSocket}.ttrpc`)}

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(`${layout.dir}/opt`)}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ${q(layout.sandboxImage)}

[plugins."io.containerd.cri.v1.runtime"]
  cdi_spec_dirs = []
  # Test machines may run without CAP_SYS_RESOURCE, so no process may lower its OOM score
  # (the sandbox's -998 fails in runc: "failed to update /proc/self/oom_score_adj").
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = ${q(`${layout.binDir}/runc`)}
        Root = ${q(p.runcRoot)}
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [${q(`${layout.binDir}/cni`)}]
    conf_dir = ${q(p.cniConfDir)}

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

/** The KubeletConfiguration (JSON, which the kubelet reads as YAML); see the module doc. */
export function kubeletConfig(layout: NodeLayout): string {
  const p = nodePaths(layout);
  return JSON.stringify(
    {
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      address: "127.0.0.1",
      port: layout.kubeletPort,
      readOnlyPort: 0,
      healthzPort: 0,
      authentication: {
        anonymous: { enabled: true },
        webhook: { enabled: false },
      },
      authorization: { mode: "AlwaysAllow" },
      containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
      cgroupDriver: "cgroupfs",
      cgroupsPerQOS: true,
      cgroupRoot: layout.cgroupRoot,
      failCgroupV1: false,
      failSwapOn: false,
      evictionHard: {},
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      podLogsDir: p.podLogsDir,
      volumePluginDir: p.volumePluginDir,
      rotateCertificates: false,
      serverTLSBootstrap: false,
      registerNode: true,
      // A kubelet reports its status when it changed, else every nodeStatusReportFrequency
      // (default 5 min). A reboot is seen by a heartbeat from after the old kubelet ended
      // (tests/node/real_node.ts), and a kubelet back within the same second (heartbeats carry
      // whole seconds) may report nothing new after that for 5 minutes: report every 2-3 s.
      nodeStatusUpdateFrequency: "1s",
      nodeStatusReportFrequency: "2s",
    },
    null,
    2,
  );
}

/** The kubelet's command line. */
export function kubeletArgs(layout: NodeLayout): string[] {
  const p = nodePaths(layout);
  return [
    `--config=${p.kubeletConfig}`,
    `--kubeconfig=${p.kubeletKubeconfig}`,
    `--root-dir=${p.kubeletRoot}`,
    `--cert-dir=${p.kubeletCertDir}`,
    `--hostname-override=${layout.name}`,
    `--node-ip=${NODE_IP}`,
    "--v=1",
  ];
}
