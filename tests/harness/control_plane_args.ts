/**
 * The pure half of the control plane: command lines and kubeconfig files
 * computed from a layout (ports, paths). {@linkcode ./control_plane.ts} runs them.
 *
 * @module
 */

import { stringify } from "yaml";
import type { Pki } from "./pki.ts";

/** Where everything of one control plane lives and listens. */
export interface ControlPlaneLayout {
  /** Folder holding the data, PKI and kubeconfigs (removed by stop()). */
  dir: string;
  pki: Pki;
  etcdDataDir: string;
  etcdClientPort: number;
  etcdPeerPort: number;
  apiServerPort: number;
  /** Admin kubeconfig, also used by the controller manager, scheduler and kwok. */
  kubeconfigPath: string;
}

/** Service-account token issuer (and default API audience). */
export const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";
/** Service IP range; its first address (10.0.0.1) is in the serving certificate. */
export const SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24";

/**
 * Controllers the controller manager runs by default: ownerReference garbage
 * collection, PDB status (evictions depend on it), namespace deletion, default
 * service accounts and their token secrets, the root CA config map, DaemonSets,
 * Deployments and ReplicaSets. The node-lifecycle controller is left out on
 * purpose: its taints and evictions of NotReady nodes would race the tests.
 */
export const DEFAULT_CONTROLLERS: readonly string[] = [
  "garbage-collector-controller",
  "disruption-controller",
  "namespace-controller",
  "serviceaccount-controller",
  "serviceaccount-token-controller",
  "root-ca-certificate-publisher-controller",
  "daemonset-controller",
  "deployment-controller",
  "replicaset-controller",
];

/** etcd URL for clients (the API server, compaction). */
export function etcdUrl(layout: ControlPlaneLayout): string {
  return `http://127.0.0.1:${layout.etcdClientPort}`;
}

/** API server URL. */
export function apiServerUrl(layout: ControlPlaneLayout): string {
  return `https://127.0.0.1:${layout.apiServerPort}`;
}

/** etcd: one member on loopback, no fsync (test data is disposable). */
export function etcdArgs(layout: ControlPlaneLayout): string[] {
  const client = etcdUrl(layout);
  const peer = `http://127.0.0.1:${layout.etcdPeerPort}`;
  return [
    "--name=default",
    `--data-dir=${layout.etcdDataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=default=${peer}`,
    "--initial-cluster-state=new",
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ];
}

/** kube-apiserver: envtest's flags plus mTLS, service-account keys and loopback-only endpoints. */
export function apiServerArgs(layout: ControlPlaneLayout): string[] {
  const pki = layout.pki;
  return [
    `--etcd-servers=${etcdUrl(layout)}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${layout.apiServerPort}`,
    `--tls-cert-file=${pki.serverCert}`,
    `--tls-private-key-file=${pki.serverKey}`,
    `--client-ca-file=${pki.caCert}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    "--allow-privileged=true",
    "--authorization-mode=RBAC",
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--api-audiences=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    // No kube-proxy or real network: do not publish the default Service's endpoints.
    "--endpoint-reconciler-type=none",
    // It taints every new node not-ready:NoSchedule until the node-lifecycle
    // controller lifts it; that controller is not run (see DEFAULT_CONTROLLERS).
    "--disable-admission-plugins=TaintNodesByCondition",
    // Close open watches on SIGTERM instead of waiting for them (restartApiServer()).
    "--shutdown-watch-termination-grace-period=1s",
    "--profiling=false",
  ];
}

/** kube-controller-manager with `controllers`, no HTTPS endpoint and no leader election. */
export function controllerManagerArgs(
  layout: ControlPlaneLayout,
  controllers: readonly string[] = DEFAULT_CONTROLLERS,
): string[] {
  return [
    `--kubeconfig=${layout.kubeconfigPath}`,
    `--controllers=${controllers.join(",")}`,
    `--service-account-private-key-file=${layout.pki.serviceAccountKey}`,
    `--root-ca-file=${layout.pki.caCert}`,
    "--use-service-account-credentials=false",
    "--leader-elect=false",
    "--secure-port=0",
    "--profiling=false",
  ];
}

/** kube-scheduler with no HTTPS endpoint and no leader election. */
export function schedulerArgs(layout: ControlPlaneLayout): string[] {
  return [
    `--kubeconfig=${layout.kubeconfigPath}`,
    "--leader-elect=false",
    "--secure-port=0",
    "--profiling=false",
  ];
}

/** A kubeconfig (YAML) for one cluster and one user. */
export function renderKubeconfig(options: {
  server: string;
  caPem: string;
  /** PEM client certificate and key (mTLS user). */
  clientCertPem?: string;
  clientKeyPem?: string;
  /** Bearer token user. */
  token?: string;
  userName?: string;
  namespace?: string;
}): string {
  const b64 = (pem: string) => btoa(pem);
  const userName = options.userName ?? "user";
  const user: Record<string, string> = {};
  if (options.clientCertPem && options.clientKeyPem) {
    user["client-certificate-data"] = b64(options.clientCertPem);
    user["client-key-data"] = b64(options.clientKeyPem);
  }
  if (options.token) user.token = options.token;
  const context: Record<string, string> = { cluster: "bootc-test", user: userName };
  if (options.namespace) context.namespace = options.namespace;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "bootc-test",
      cluster: { server: options.server, "certificate-authority-data": b64(options.caPem) },
    }],
    users: [{ name: userName, user }],
    contexts: [{ name: "bootc-test", context }],
    "current-context": "bootc-test",
  });
}
