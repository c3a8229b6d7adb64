/**
 * The Helm chart (charts/bootc-operator) with a real helm: it lints; with default values it
 * renders exactly manifests/install.yaml's objects, so the two cannot drift; values change what
 * they should and nothing else; the monitoring toggles render the kustomize component's
 * objects; bad values are refused; and it installs, upgrades and uninstalls on a real API server.
 */
import assert from "node:assert/strict";
import { parseAllDocuments, stringify } from "yaml";
import { resolveBinDir, startControlPlane } from "../harness/control_plane.ts";
import { CHART, type Helm, KUBE_VERSION, openHelm } from "./helm.ts";
import { diffObjects, type Obj, objectKey, objectsByKey } from "./objects.ts";

const REPO = new URL("../../", import.meta.url);
const INSTALL = new URL("manifests/install.yaml", REPO).pathname;
const DIGEST = "sha256:" + "b".repeat(64);
const KEEP = "helm.sh/resource-policy";

async function installObjects(): Promise<Map<string, Obj>> {
  return objectsByKey(await Deno.readTextFile(INSTALL));
}

/** `helm template` of `chart` with `args` (values), parsed. */
async function render(helm: Helm, args: string[] = [], chart = CHART): Promise<Map<string, Obj>> {
  const out = await helm.ok([
    "template",
    "bootc-operator",
    chart,
    "--kube-version",
    KUBE_VERSION,
    ...args,
  ]);
  return objectsByKey(out);
}

/**
 * The chart's one intended difference from install.yaml: its CRDs carry helm's keep policy, so
 * `helm uninstall` does not delete every pool and BootcNode. Asserts it is there, removes it.
 */
function withoutKeepPolicy(objects: Map<string, Obj>): Map<string, Obj> {
  for (const o of objects.values()) {
    if (o.kind !== "CustomResourceDefinition") {
      assert.equal(o.metadata.annotations?.[KEEP], undefined, `${objectKey(o)} has ${KEEP}`);
      continue;
    }
    assert.deepEqual(o.metadata.annotations, { [KEEP]: "keep" }, objectKey(o));
    delete o.metadata.annotations;
  }
  return objects;
}

function only(objects: Map<string, Obj>, kind: string): Obj {
  const found = [...objects.values()].filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0];
}

Deno.test("helm chart: lint, template against install.yaml, values, install", async (t) => {
  const helm = await openHelm();
  try {
    await t.step("helm is the pinned build", async () => {
      assert.match(await helm.ok(["version", "--short"]), /^v3\.22\.0/);
    });

    await t.step("helm lint --strict", async () => {
      const out = await helm.ok(["lint", "--strict", "--kube-version", KUBE_VERSION, CHART]);
      assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });

    await t.step("default values render exactly install.yaml's objects", async () => {
      const chart = withoutKeepPolicy(await render(helm));
      const install = await installObjects();
      assert.deepEqual(diffObjects(chart, install), []);
      assert.equal(chart.size, install.size);
    });

    await t.step("a chart that drifts from install.yaml is caught", async () => {
      const copy = await Deno.makeTempDir({ prefix: "bootc-chart-" });
      try {
        await new Deno.Command("cp", { args: ["-r", `${CHART}/.`, copy] }).output();
        const daemon = `${copy}/templates/daemon.yaml`;
        const text = await Deno.readTextFile(daemon);
        assert.ok(text.includes("hostPID: true"));
        await Deno.writeTextFile(daemon, text.replace("hostPID: true", "hostPID: false"));
        const diff = diffObjects(
          withoutKeepPolicy(await render(helm, [], copy)),
          await installObjects(),
        );
        assert.deepEqual(diff, [
          "differs: apps/v1 DaemonSet bootc-operator/bootc-operator-daemon at .spec.template.spec.hostPID: false != true",
        ]);
      } finally {
        await Deno.remove(copy, { recursive: true });
      }
    });

    await t.step("values change what they should and nothing else", async () => {
      // A values file, as users write one; helm merges maps (nodeSelector) and replaces lists.
      const file = await Deno.makeTempFile({ prefix: "bootc-values-", suffix: ".yaml" });
      await Deno.writeTextFile(
        file,
        stringify({
          controller: {
            replicas: 3,
            image: { repository: "registry.example/ops/controller", digest: DIGEST },
            extraArgs: ["--log-level=debug"],
            resources: { requests: { cpu: "50m" } },
          },
          daemon: {
            image: { tag: "v2" },
            extraArgs: ["--verbose", "--x=1"],
            nodeSelector: { "kubernetes.io/arch": "arm64" },
            tolerations: [{ key: "edge", operator: "Exists", effect: "NoSchedule" }],
            resources: { limits: { memory: "128Mi" } },
          },
        }),
      );
      const chart = withoutKeepPolicy(
        await render(helm, ["-f", file]).finally(() => Deno.remove(file)),
      );
      const expected = await installObjects();
      const deployment = only(expected, "Deployment");
      const controller = deployment.spec.template.spec.containers[0];
      deployment.spec.replicas = 3;
      controller.image = `registry.example/ops/controller@${DIGEST}`;
      controller.args.push("--log-level=debug");
      controller.resources.requests.cpu = "50m";
      const daemonSet = only(expected, "DaemonSet");
      const pod = daemonSet.spec.template.spec;
      pod.containers[0].image = "quay.io/bootc-operator/daemon:v2";
      pod.containers[0].args.push("--verbose", "--x=1");
      pod.containers[0].resources.limits.memory = "128Mi";
      pod.nodeSelector["kubernetes.io/arch"] = "arm64";
      pod.tolerations = [{ key: "edge", operator: "Exists", effect: "NoSchedule" }];
      assert.deepEqual(diffObjects(chart, expected), []);
    });

    await t.step("namespace: every namespaced object and the daemon's identity move", async () => {
      const chart = await render(helm, ["--set", "namespace.name=bootc-system"]);
      const install = await installObjects();
      assert.equal(chart.size, install.size);
      const text = JSON.stringify([...chart.values()]);
      assert.ok(!text.includes('"namespace":"bootc-operator"'), "no object left in bootc-operator");
      assert.ok(text.includes("system:serviceaccount:bootc-system:bootc-operator-daemon"));
      assert.ok(!text.includes("system:serviceaccount:bootc-operator:"));
      const moved = [...chart.values()].filter((o) => o.metadata.namespace === "bootc-system");
      const before = [...install.values()].filter((o) => o.metadata.namespace === "bootc-operator");
      assert.equal(moved.length, before.length);
      // Events about cluster-scoped objects stay in "default", wherever the operator lives.
      const events = [...chart.values()].filter((o) => o.metadata.namespace === "default");
      assert.deepEqual(events.map((o) => o.kind).sort(), ["Role", "RoleBinding"]);
      assert.equal(only(chart, "Namespace").metadata.name, "bootc-system");
      const none = await render(helm, ["--set", "namespace.create=false"]);
      assert.equal([...none.values()].filter((o) => o.kind === "Namespace").length, 0);
      assert.equal(none.size, install.size - 1);
      const drop = await render(helm, ["--set", "crds.keep=false"]);
      for (const o of drop.values()) assert.equal(o.metadata.annotations?.[KEEP], undefined);
    });

    await t.step("monitoring toggles render the kustomize component's objects", async () => {
      const install = await installObjects();
      const extra = (all: Map<string, Obj>) =>
        new Map([...all].filter(([key]) => !install.has(key)));
      const chart = extra(
        await render(helm, [
          "--set",
          "monitoring.prometheusRule.enabled=true",
          "--set",
          "monitoring.podMonitor.enabled=true",
          "--set",
          "monitoring.dashboard.enabled=true",
        ]),
      );
      const kustomized = extra(await kustomizeWithMonitoring());
      assert.deepEqual(diffObjects(chart, kustomized), []);
      assert.deepEqual([...chart.values()].map((o) => o.kind).sort(), [
        "ConfigMap",
        "PodMonitor",
        "PrometheusRule",
      ]);
    });

    await t.step(
      "serviceMonitor: a Service for the controllers' metrics, scraped as their job",
      async () => {
        const chart = await render(helm, [
          "--set",
          "monitoring.serviceMonitor.enabled=true",
          "--set",
          "monitoring.serviceMonitor.labels.release=kps",
          "--set",
          "monitoring.prometheusRule.enabled=true",
          "--set",
          "monitoring.prometheusRule.labels.release=kps",
        ]);
        const service = only(chart, "Service");
        const monitor = only(chart, "ServiceMonitor");
        const deployment = only(chart, "Deployment");
        const pod = deployment.spec.template;
        assert.deepEqual(service.spec.selector, deployment.spec.selector.matchLabels);
        for (const [k, v] of Object.entries(service.spec.selector)) {
          assert.equal(pod.metadata.labels[k], v);
        }
        const port = pod.spec.containers[0].ports.find((p: Obj) =>
          p.name === service.spec.ports[0].targetPort
        );
        assert.equal(port?.containerPort, service.spec.ports[0].port);
        for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) {
          assert.equal(
            service.metadata.labels[k],
            v,
            `the ServiceMonitor selects the Service (${k})`,
          );
        }
        // The rules and the dashboard select job="bootc-operator-controller".
        assert.equal(service.metadata.labels[monitor.spec.jobLabel], "bootc-operator-controller");
        assert.equal(monitor.spec.endpoints[0].port, service.spec.ports[0].name);
        assert.equal(monitor.spec.endpoints[0].path, "/metrics");
        assert.equal(monitor.metadata.labels.release, "kps");
        assert.equal(only(chart, "PrometheusRule").metadata.labels.release, "kps");
        const service2 = await render(helm, ["--set", "monitoring.service.enabled=true"]);
        assert.equal(
          [...service2.values()].filter((o) => o.kind === "ServiceMonitor").length,
          0,
        );
        assert.deepEqual(only(service2, "Service"), service);
      },
    );

    await t.step("bad values are refused with a message naming them", async () => {
      const cases: [string[], RegExp][] = [
        [["--set", "controller.replicas=0"], /replicas/],
        [["--set", "controler.replicas=3"], /controler/],
        [["--set", "controller.image.digest=abc"], /digest/],
        [["--set", "namespace.name=Not_A_Name"], /namespace/],
        [["--set", "monitoring.dashboard.enabled=yes"], /enabled/],
      ];
      for (const [args, message] of cases) {
        const r = await helm.run(["template", "x", CHART, "--kube-version", KUBE_VERSION, ...args]);
        assert.notEqual(r.code, 0, `${args.join(" ")} was accepted`);
        assert.match(r.stderr, /values don't meet the specifications of the schema/);
        assert.match(r.stderr, message);
      }
    });

    await t.step("install, upgrade and uninstall on a real API server", async () => {
      await installOnControlPlane(helm);
    });
  } finally {
    await helm.close();
  }
});

/** `kubectl kustomize` of an overlay with manifests/ and the monitoring component. */
async function kustomizeWithMonitoring(): Promise<Map<string, Obj>> {
  const dir = await Deno.makeTempDir({ prefix: "bootc-overlay-" });
  try {
    // kustomize wants relative paths to other kustomizations.
    const up = dir.split("/").filter(Boolean).map(() => "..").join("/");
    const root = `${up}${REPO.pathname.replace(/\/$/, "")}`;
    await Deno.writeTextFile(
      `${dir}/kustomization.yaml`,
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ${root}/manifests\n` +
        `components:\n  - ${root}/manifests/monitoring\n`,
    );
    const out = await new Deno.Command(`${await resolveBinDir()}/kubectl`, {
      args: ["kustomize", dir],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return objectsByKey(new TextDecoder().decode(out.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * `helm install` (release recorded in "default"; the chart creates the operator's namespace),
 * every install.yaml object then exists and is helm's; `helm upgrade` changes the replicas;
 * `helm uninstall` removes the workloads and keeps the CRDs.
 */
async function installOnControlPlane(helm: Helm): Promise<void> {
  // Objects only: no nodes, scheduler or controllers needed.
  const cp = await startControlPlane({
    kwok: false,
    controllerManager: false,
    scheduler: false,
    quiet: true,
  });
  try {
    const kube = ["--kubeconfig", cp.kubeconfigPath, "--namespace", "default"];
    await helm.ok(["install", "bootc-operator", CHART, ...kube]);
    const got = await cp.kubectl(["get", "-f", INSTALL, "-o", "yaml"]);
    assert.equal(got.code, 0, got.stderr);
    const items: Obj[] = parseAllDocuments(got.stdout)[0].toJS().items;
    assert.equal(
      items.length,
      (await installObjects()).size,
      "every object of install.yaml exists",
    );
    for (const o of items) {
      assert.equal(
        o.metadata.annotations?.["meta.helm.sh/release-name"],
        "bootc-operator",
        objectKey(o),
      );
    }
    const replicas = async () => {
      const r = await cp.kubectl([
        "get",
        "deployment",
        "-n",
        "bootc-operator",
        "bootc-operator-controller",
        "-o",
        "jsonpath={.spec.replicas}",
      ]);
      return r.stdout;
    };
    assert.equal(await replicas(), "2");
    await helm.ok(["upgrade", "bootc-operator", CHART, ...kube, "--set", "controller.replicas=3"]);
    assert.equal(await replicas(), "3");
    await helm.ok(["uninstall", "bootc-operator", ...kube]);
    const gone = await cp.kubectl([
      "get",
      "deployment",
      "-n",
      "bootc-operator",
      "bootc-operator-controller",
    ]);
    assert.notEqual(gone.code, 0, "the Deployment is gone");
    const crds = await cp.kubectl(["get", "crd", "-o", "name"]);
    assert.equal(
      crds.stdout.split("\n").filter((l) => l.includes("node.bootc.dev")).length,
      3,
      crds.stdout,
    );
  } finally {
    await cp.stop();
  }
}
