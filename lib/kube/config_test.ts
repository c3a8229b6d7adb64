import assert from "node:assert/strict";
import {
  ExecCredentialSource,
  KubeConfigError,
  loadKubeConfig,
  parseKubeConfig,
  TokenFileSource,
} from "./config.ts";

const b64 = (s: string) => btoa(s);
const CA = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";

function kubeconfig(user: string, extraCluster = "", current = "main"): string {
  return `apiVersion: v1
kind: Config
current-context: ${current}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
${extraCluster}
contexts:
- name: main
  context:
    cluster: c1
    user: u1
    namespace: bootc-system
- name: other
  context:
    cluster: c1
    user: u2
users:
- name: u1
  user:
${user}
- name: u2
  user:
    token: second
`;
}

Deno.test("kubeconfig with inline data: CA, client cert/key, namespace", async () => {
  const cfg = await parseKubeConfig(
    kubeconfig(
      `    client-certificate-data: ${b64(CERT)}\n    client-key-data: ${b64(KEY)}`,
      `    certificate-authority-data: ${b64(CA)}`,
    ),
  );
  assert.equal(cfg.server, "https://10.0.0.1:6443");
  assert.deepEqual(cfg.caCerts, [CA]);
  assert.equal(cfg.clientCert, CERT);
  assert.equal(cfg.clientKey, KEY);
  assert.equal(cfg.namespace, "bootc-system");
  assert.equal(cfg.source, "kubeconfig");
  assert.equal(cfg.context, "main");
  assert.equal(cfg.credentials, undefined);
});

Deno.test("kubeconfig file references resolve relative to the kubeconfig; context override; token", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/pki`);
    await Deno.writeTextFile(`${dir}/pki/ca.crt`, CA);
    await Deno.writeTextFile(`${dir}/pki/c.crt`, CERT);
    await Deno.writeTextFile(`${dir}/pki/c.key`, KEY);
    await Deno.writeTextFile(`${dir}/tok`, "file-token\n");
    const text = kubeconfig(
      `    client-certificate: pki/c.crt\n    client-key: ${dir}/pki/c.key\n    tokenFile: tok`,
      `    certificate-authority: pki/ca.crt`,
    );
    await Deno.writeTextFile(`${dir}/config`, text);
    const cfg = await loadKubeConfig({ path: `${dir}/config`, env: () => undefined });
    assert.deepEqual(cfg.caCerts, [CA]);
    assert.equal(cfg.clientCert, CERT);
    assert.equal(cfg.clientKey, KEY);
    assert.equal((await cfg.credentials!.get()).token, "file-token");

    // KUBECONFIG colon list (missing files skipped); context override picks user u2.
    const other = await loadKubeConfig({
      context: "other",
      env: (n) => (n === "KUBECONFIG" ? `${dir}/config:/nonexistent` : undefined),
    });
    assert.equal((await other.credentials!.get()).token, "second");
    assert.equal(other.namespace, "default");
    await assert.rejects(
      () => loadKubeConfig({ path: `${dir}/config`, context: "nope" }),
      /no context named "nope"/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KUBECONFIG list: merged as kubectl does, first definition wins, paths per file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/a`);
    await Deno.mkdir(`${dir}/b`);
    await Deno.writeTextFile(`${dir}/b/tok`, "b-file-token\n");
    // a: only the current context and a user that shadows b's user of the same name.
    await Deno.writeTextFile(
      `${dir}/a/config`,
      `current-context: from-b\nusers:\n- name: shared\n  user:\n    token: from-a\n`,
    );
    // b: the cluster, the context, a second current-context (ignored) and a token file
    // relative to b's folder.
    await Deno.writeTextFile(
      `${dir}/b/config`,
      `current-context: other
clusters:
- name: c
  cluster:
    server: https://10.0.0.2:6443
contexts:
- name: from-b
  context: {cluster: c, user: shared, namespace: ns-b}
- name: file-user
  context: {cluster: c, user: filer}
users:
- name: shared
  user:
    token: from-b
- name: filer
  user:
    tokenFile: tok
`,
    );
    const list = `${dir}/a/config:${dir}/missing:${dir}/b/config`;
    const env = (n: string) => (n === "KUBECONFIG" ? list : undefined);
    const cfg = await loadKubeConfig({ env });
    assert.equal(cfg.context, "from-b");
    assert.equal(cfg.server, "https://10.0.0.2:6443");
    assert.equal(cfg.namespace, "ns-b");
    assert.equal((await cfg.credentials!.get()).token, "from-a");
    const filer = await loadKubeConfig({ env, context: "file-user" });
    assert.equal((await filer.credentials!.get()).token, "b-file-token");
    await assert.rejects(
      () => loadKubeConfig({ env: (n) => (n === "KUBECONFIG" ? `${dir}/x:${dir}/y` : undefined) }),
      /none of the kubeconfig files exist/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("insecure-skip-tls-verify is refused unless allowInsecure", async () => {
  const text = kubeconfig("    token: t", "    insecure-skip-tls-verify: true");
  await assert.rejects(() => parseKubeConfig(text), (e) => {
    assert.ok(e instanceof KubeConfigError);
    assert.match(e.message, /unsafely-ignore-certificate-errors/);
    return true;
  });
  const cfg = await parseKubeConfig(text, { allowInsecure: true });
  assert.equal(cfg.insecureSkipTlsVerify, true);
});

Deno.test("a client certificate without a key is an error", async () => {
  await assert.rejects(
    () => parseKubeConfig(kubeconfig(`    client-certificate-data: ${b64(CERT)}`)),
    /both be set/,
  );
});

async function writePlugin(dir: string, expiration: string | null, version: string) {
  // The plugin counts its runs and echoes KUBERNETES_EXEC_INFO's apiVersion back.
  const status = expiration === null ? "" : `, "expirationTimestamp": "${expiration}"`;
  const script = `#!/bin/sh
n=$(cat "${dir}/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${dir}/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "${dir}/info"
echo '{"apiVersion": "${version}", "kind": "ExecCredential", "status": {"token": "tok-'$n'-'$MY_ARG'"${status}}}'
`;
  await Deno.writeTextFile(`${dir}/plugin.sh`, script);
  await Deno.chmod(`${dir}/plugin.sh`, 0o755);
}

Deno.test("exec plugin (v1): runs the script relative to the kubeconfig, passes env and cluster info", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writePlugin(dir, "2026-01-01T01:00:00Z", "client.authentication.k8s.io/v1");
    await Deno.writeTextFile(
      `${dir}/config`,
      kubeconfig(
        `    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      provideClusterInfo: true
      env:
      - name: MY_ARG
        value: x`,
        `    certificate-authority-data: ${b64(CA)}`,
      ),
    );
    const cfg = await loadKubeConfig({ path: `${dir}/config` });
    const src = cfg.credentials as ExecCredentialSource;
    assert.ok(src instanceof ExecCredentialSource);
    assert.equal((await src.get()).token, "tok-1-x");
    const info = JSON.parse(await Deno.readTextFile(`${dir}/info`));
    assert.equal(info.apiVersion, "client.authentication.k8s.io/v1");
    assert.equal(info.kind, "ExecCredential");
    assert.equal(info.spec.interactive, false);
    assert.equal(info.spec.cluster.server, "https://10.0.0.1:6443/");
    // refresh (after a 401) re-runs the plugin.
    assert.equal((await src.get({ refresh: true })).token, "tok-2-x");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("exec plugin (v1beta1): credentials cached until expirationTimestamp", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writePlugin(dir, "2026-01-01T01:00:00Z", "client.authentication.k8s.io/v1beta1");
    let now = Date.parse("2026-01-01T00:00:00Z");
    const src = new ExecCredentialSource(
      {
        apiVersion: "client.authentication.k8s.io/v1beta1",
        command: `${dir}/plugin.sh`,
        env: [{ name: "MY_ARG", value: "y" }],
      },
      { now: () => now },
    );
    assert.equal((await src.get()).token, "tok-1-y");
    now += 30 * 60_000;
    assert.equal((await src.get()).token, "tok-1-y");
    now += 31 * 60_000; // past expiry
    assert.equal((await src.get()).token, "tok-2-y");
    assert.equal((await Deno.readTextFile(`${dir}/count`)).trim(), "2");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("exec plugin failures are clear errors", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/bad.sh`, "#!/bin/sh\necho 'login required' >&2\nexit 3\n");
    await Deno.chmod(`${dir}/bad.sh`, 0o755);
    const bad = new ExecCredentialSource({ command: `${dir}/bad.sh` });
    await assert.rejects(() => bad.get(), /exited with 3: login required/);
    await writePlugin(dir, null, "client.authentication.k8s.io/v1beta1");
    const wrong = new ExecCredentialSource({ command: `${dir}/plugin.sh` });
    await assert.rejects(() => wrong.get(), /expected client.authentication.k8s.io\/v1/);
    const missing = new ExecCredentialSource({
      command: `${dir}/none`,
      installHint: "install the thing",
    });
    await assert.rejects(() => missing.get(), /install the thing/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("in-cluster: env + service account dir; token re-read after a minute or on refresh", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/token`, "t1");
    await Deno.writeTextFile(`${dir}/ca.crt`, CA);
    await Deno.writeTextFile(`${dir}/namespace`, "bootc-system\n");
    const env = (n: string) =>
      ({ KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" } as Record<
        string,
        string
      >)[n];
    const cfg = await loadKubeConfig({ env, serviceAccountDir: dir });
    assert.equal(cfg.source, "in-cluster");
    assert.equal(cfg.server, "https://[fd00::1]:443");
    assert.deepEqual(cfg.caCerts, [CA]);
    assert.equal(cfg.namespace, "bootc-system");
    assert.equal((await cfg.credentials!.get()).token, "t1");

    let now = 0;
    const src = new TokenFileSource(`${dir}/token`, { now: () => now });
    assert.equal((await src.get()).token, "t1");
    await Deno.writeTextFile(`${dir}/token`, "t2");
    now = 30_000;
    assert.equal((await src.get()).token, "t1", "still cached");
    assert.equal((await src.get({ refresh: true })).token, "t2", "refresh re-reads");
    await Deno.writeTextFile(`${dir}/token`, "t3");
    now = 30_000 + 61_000;
    assert.equal((await src.get()).token, "t3", "re-read when older than a minute");

    // Without the service-account directory there is no in-cluster config.
    await assert.rejects(
      () => loadKubeConfig({ env, serviceAccountDir: `${dir}/missing` }),
      KubeConfigError,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a JSON kubeconfig is parsed without the yaml package", async () => {
  const cfg = await parseKubeConfig(JSON.stringify({
    "current-context": "j",
    clusters: [{ name: "c", cluster: { server: "https://j:6443" } }],
    contexts: [{ name: "j", context: { cluster: "c", user: "u", namespace: "ns" } }],
    users: [{ name: "u", user: { token: "jt" } }],
  }));
  assert.equal(cfg.server, "https://j:6443");
  assert.equal(cfg.namespace, "ns");
  assert.equal((await cfg.credentials!.get()).token, "jt");
  // A YAML flow mapping that is not JSON still parses (through yaml).
  const flow = await parseKubeConfig(
    "{current-context: f, clusters: [{name: c, cluster: {server: 'https://f'}}], " +
      "contexts: [{name: f, context: {cluster: c}}]}",
  );
  assert.equal(flow.server, "https://f");
});
