import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  apiServerArgs,
  controllerManagerArgs,
  type ControlPlaneLayout,
  DEFAULT_CONTROLLERS,
  etcdArgs,
  renderKubeconfig,
  schedulerArgs,
} from "./control_plane_args.ts";

const layout: ControlPlaneLayout = {
  dir: "/t",
  pki: {
    dir: "/t/pki",
    caCert: "/t/pki/ca.crt",
    caKey: "/t/pki/ca.key",
    serverCert: "/t/pki/apiserver.crt",
    serverKey: "/t/pki/apiserver.key",
    adminCert: "/t/pki/admin.crt",
    adminKey: "/t/pki/admin.key",
    serviceAccountKey: "/t/pki/sa.key",
    serviceAccountPub: "/t/pki/sa.pub",
  },
  etcdDataDir: "/t/etcd",
  etcdClientPort: 1001,
  etcdPeerPort: 1002,
  apiServerPort: 1003,
  kubeconfigPath: "/t/admin.kubeconfig",
};

function flag(args: string[], name: string): string | undefined {
  return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

Deno.test("etcd listens on loopback only, on both chosen ports", () => {
  const args = etcdArgs(layout);
  assert.equal(flag(args, "listen-client-urls"), "http://127.0.0.1:1001");
  assert.equal(flag(args, "listen-peer-urls"), "http://127.0.0.1:1002");
  assert.equal(flag(args, "initial-cluster"), "default=http://127.0.0.1:1002");
  assert.equal(flag(args, "data-dir"), "/t/etcd");
});

Deno.test("kube-apiserver flags wire PKI, etcd, RBAC and service-account tokens", () => {
  const args = apiServerArgs(layout);
  assert.equal(flag(args, "etcd-servers"), "http://127.0.0.1:1001");
  assert.equal(flag(args, "secure-port"), "1003");
  assert.equal(flag(args, "bind-address"), "127.0.0.1");
  assert.equal(flag(args, "client-ca-file"), "/t/pki/ca.crt");
  assert.equal(flag(args, "tls-cert-file"), "/t/pki/apiserver.crt");
  assert.equal(flag(args, "authorization-mode"), "RBAC");
  assert.equal(flag(args, "service-account-signing-key-file"), "/t/pki/sa.key");
  assert.equal(flag(args, "service-account-key-file"), "/t/pki/sa.pub");
  assert.ok(flag(args, "service-account-issuer"));
  assert.equal(flag(args, "endpoint-reconciler-type"), "none");
  assert.equal(flag(args, "disable-admission-plugins"), "TaintNodesByCondition");
});

Deno.test("controller manager and scheduler use the admin kubeconfig, no ports, no elections", () => {
  const kcm = controllerManagerArgs(layout);
  assert.equal(flag(kcm, "kubeconfig"), "/t/admin.kubeconfig");
  assert.equal(flag(kcm, "controllers"), DEFAULT_CONTROLLERS.join(","));
  for (
    const c of [
      "garbage-collector-controller",
      "disruption-controller",
      "namespace-controller",
      "serviceaccount-controller",
      "serviceaccount-token-controller",
      "daemonset-controller",
    ]
  ) assert.ok(DEFAULT_CONTROLLERS.includes(c), c);
  assert.equal(flag(kcm, "service-account-private-key-file"), "/t/pki/sa.key");
  assert.equal(flag(kcm, "root-ca-file"), "/t/pki/ca.crt");
  assert.equal(flag(controllerManagerArgs(layout, ["a", "b"]), "controllers"), "a,b");
  for (const args of [kcm, schedulerArgs(layout)]) {
    assert.equal(flag(args, "secure-port"), "0");
    assert.equal(flag(args, "leader-elect"), "false");
  }
});

Deno.test("renderKubeconfig embeds the CA and either a client certificate or a token", () => {
  const certUser = parse(renderKubeconfig({
    server: "https://127.0.0.1:1003",
    caPem: "CA",
    clientCertPem: "CERT",
    clientKeyPem: "KEY",
  }));
  assert.equal(certUser["current-context"], "bootc-test");
  assert.equal(certUser.clusters[0].cluster.server, "https://127.0.0.1:1003");
  assert.equal(atob(certUser.clusters[0].cluster["certificate-authority-data"]), "CA");
  assert.equal(atob(certUser.users[0].user["client-certificate-data"]), "CERT");
  assert.equal(atob(certUser.users[0].user["client-key-data"]), "KEY");
  const tokenUser = parse(
    renderKubeconfig({ server: "s", caPem: "CA", token: "t0k", namespace: "ns" }),
  );
  assert.deepEqual(tokenUser.users[0].user, { token: "t0k" });
  assert.equal(tokenUser.contexts[0].context.namespace, "ns");
});
