/**
 * Installing the operator's images on real test nodes (tests/node/real_node.ts), shared by the
 * install tests: image builds from the bundles, digest names in containerd, the kustomize overlay
 * a user writes, a write with the daemon's own token, and diagnostics for a failed wait.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ensureBuild, TARGETS } from "../../tools/build.ts";
import { buildImages, type BuiltImage } from "../../tools/image/images.ts";
import { YAML_PARSER_BUNDLE } from "../../lib/kube/config.ts";
import type { ControlPlane, Pod } from "../harness/control_plane.ts";
import { Resources } from "../../lib/kube/mod.ts";
import type { BootcNodePool } from "../../lib/api/schema.ts";
import { waitFor } from "../harness/wait.ts";
import type { SimulatedHost } from "../bootc_sim/mod.ts";
import type { RealNode } from "./real_node.ts";

export const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
/** The operator's namespace (install.yaml, the chart's default). */
export const NAMESPACE = "bootc-operator";

/** A built image with an archive for `ctr images import`. */
export type Image = BuiltImage & { archive: string };

/**
 * Builds both images twice from fresh bundles into `work`: the release installed first, and an
 * upgrade whose bundles differ by a comment (new digests), each with an archive for ctr.
 */
export async function buildOperatorImages(work: string): Promise<[Image[], Image[]]> {
  await ensureBuild();
  const release = await buildRelease(work, "release", "");
  const upgrade = await buildRelease(work, "upgrade", "\n// upgrade\n");
  return [release, upgrade];
}

/** Builds both images from the bundles in dist/ (each with `suffix` appended) under `work/name`. */
export async function buildRelease(work: string, name: string, suffix: string): Promise<Image[]> {
  const dist = `${work}/${name}/dist`;
  await Deno.mkdir(dist, { recursive: true });
  // Copied first: other test processes may rebuild dist/ meanwhile.
  for (const target of TARGETS) {
    const files = [target.bundle, ...(target.yamlBeside ? [YAML_PARSER_BUNDLE] : [])];
    for (const file of files) {
      const text = await Deno.readTextFile(`${ROOT}/dist/${file}`);
      await Deno.writeTextFile(`${dist}/${file}`, file === target.bundle ? text + suffix : text);
    }
  }
  const built = await buildImages({
    distDir: dist,
    outDir: `${work}/${name}/images`,
    targets: TARGETS,
    log: () => {},
  });
  return await Promise.all(built.images.map(async (image) => {
    const archive = `${work}/${name}/${image.name}.oci.tar`;
    const out = await new Deno.Command("tar", {
      args: ["-C", image.layout, "-cf", archive, "."],
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return { ...image, archive };
  }));
}

/**
 * A CRI pull names an image by tag and by digest; `ctr images import` by the tag alone, so the
 * digest name the manifests pin is added as a pull would.
 */
export async function tagDigests(node: RealNode, images: Image[]): Promise<void> {
  for (const image of images) {
    const repository = image.reference.replace(/:[^:/]+$/, "");
    const tagged = await node.ctr([
      "images",
      "tag",
      image.reference,
      `${repository}@${image.digest}`,
    ]);
    assert.equal(tagged.code, 0, tagged.stderr);
  }
}

/** The overlay a user writes: manifests/ with both images pinned and a plain-HTTP registry. */
export function overlay(images: BuiltImage[], insecureRegistry: string, dir: string): string {
  // kustomize wants relative paths to other kustomizations.
  const up = dir.split("/").filter(Boolean).map(() => "..").join("/");
  const pins = images.map((i) =>
    `  - name: ${i.reference.replace(/:[^:/]+$/, "")}\n    digest: ${i.digest}\n`
  ).join("");
  return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ${up}${ROOT}/manifests
images:
${pins}patches:
  - target: { kind: Deployment, name: bootc-operator-controller }
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --insecure-registry=${insecureRegistry}
`;
}

/**
 * From inside pod `pod` (the daemon image carries Deno): an empty merge patch of each BootcNode
 * named in `names`' status, sent to the API server through the `kubernetes` Service with the
 * pod's own service-account token, as the daemon sends its writes. Returns each HTTP status and
 * body by name.
 */
export async function patchStatusFromPod(
  cp: ControlPlane,
  pod: string,
  names: string[],
): Promise<Record<string, { status: number; body: string }>> {
  const script = `
    const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    const client = Deno.createHttpClient({ caCerts: [Deno.readTextFileSync(sa + "/ca.crt")] });
    const token = Deno.readTextFileSync(sa + "/token").trim();
    const api = "https://" + Deno.env.get("KUBERNETES_SERVICE_HOST") + ":" +
      Deno.env.get("KUBERNETES_SERVICE_PORT");
    const out = {};
    for (const name of ${JSON.stringify(names)}) {
      const res = await fetch(api + "/apis/node.bootc.dev/v1alpha1/bootcnodes/" + name + "/status", {
        method: "PATCH",
        client,
        headers: { authorization: "Bearer " + token, "content-type": "application/merge-patch+json" },
        body: "{}",
      });
      out[name] = { status: res.status, body: await res.text() };
    }
    console.log(JSON.stringify(out));`;
  const run = await cp.kubectl([
    "exec",
    "-n",
    NAMESPACE,
    pod,
    "--",
    "deno",
    "eval",
    "--no-config",
    script,
  ]);
  assert.equal(run.code, 0, `deno eval in ${pod}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** Logs, events and object states for a failed wait. */
export async function diagnose(cp: ControlPlane, ...nodes: RealNode[]): Promise<string> {
  const parts = await Promise.all([
    cp.kubectl(["get", "pods", "-A", "-o", "wide"]),
    cp.kubectl(["get", "bnp,bn", "-o", "wide"]),
    cp.kubectl(["get", "events", "-A", "--sort-by=.lastTimestamp"]),
    cp.kubectl([
      "logs",
      "-n",
      NAMESPACE,
      "-l",
      "app.kubernetes.io/name=bootc-operator-daemon",
      "--tail=40",
    ]),
    cp.kubectl([
      "logs",
      "-n",
      NAMESPACE,
      "-l",
      "app.kubernetes.io/name=bootc-operator-controller",
      "--tail=30",
    ]),
  ]);
  return parts.map((p) => p.stdout + p.stderr).join("\n---\n") +
    (await Promise.all(
      nodes.map(async (n) => `\nkubelet ${n.name}:\n${await n.logTail("kubelet", 20)}`),
    )).join("");
}

/**
 * Performs the reboots the simulated `host` asks for (`systemctl reboot` in the node's host):
 * each time, `observe` records what the cluster looked like at that moment, then the node goes
 * down with everything on it and comes back, as a machine would. `done()` stops watching and
 * returns the observations, or throws the first error of a reboot or an observation; `failed`
 * rejects with that error at once (race it against a wait, so a failed reboot ends the wait).
 */
export function rebootOnRequest<T>(options: {
  host: SimulatedHost;
  node: RealNode;
  observe: () => Promise<T>;
}): { done(): Promise<T[]>; failed: Promise<never> } {
  const seen: T[] = [];
  let watching = true;
  let fail: (e: unknown) => void = () => {};
  const failed = new Promise<never>((_, reject) => fail = reject);
  failed.catch(() => {}); // observed through done() when nobody races it
  const loop = (async () => {
    while (watching) {
      if (await options.host.rebootRequested()) {
        seen.push(await options.observe());
        await options.node.reboot({ during: () => options.host.reboot() });
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  })().catch((e) => {
    watching = false;
    fail(e);
    throw e;
  });
  loop.catch(() => {}); // rethrown by done()
  return {
    failed,
    async done() {
      watching = false;
      await loop;
      return seen;
    },
  };
}

/** The controller Lease's holder: a controller pod's name and a random suffix ("" when none). */
export async function leaseHolder(cp: ControlPlane): Promise<string> {
  const lease = await cp.kubectl([
    "get",
    "lease",
    "-n",
    NAMESPACE,
    "bootc-operator-controller",
    "-o",
    "jsonpath={.spec.holderIdentity}",
  ]);
  return lease.stdout.trim();
}

/** Waits until both controller replicas are Ready; `fail` adds diagnostics to a timeout. */
export async function waitControllersReady(
  cp: ControlPlane,
  fail: (e: unknown) => Promise<never>,
): Promise<void> {
  await waitFor(async () => {
    const d = await cp.kubectl([
      "get",
      "deployment",
      "-n",
      NAMESPACE,
      "bootc-operator-controller",
      "-o",
      "jsonpath={.status.readyReplicas}",
    ]);
    return d.stdout.trim() === "2";
  }, { timeoutMs: 120_000, intervalMs: 500, message: "both controller replicas Ready" })
    .catch(fail);
}

/** Creates pool "edge" of the one node `nodeName` on image `ref`, one node at a time. */
export async function createPool(cp: ControlPlane, nodeName: string, ref: string): Promise<void> {
  await cp.client.resource<BootcNodePool>(Resources.bootcNodePools).create({
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: { name: "edge" },
    spec: {
      nodeSelector: { matchLabels: { "kubernetes.io/hostname": nodeName } },
      image: { ref },
      rollout: { maxUnavailable: 1 },
    },
  } as unknown as BootcNodePool);
}

/** `jsonpath` over the daemon pods (kubectl's output, trimmed). */
export async function daemonPods(cp: ControlPlane, jsonpath: string): Promise<string> {
  const out = await cp.kubectl([
    "get",
    "pods",
    "-n",
    NAMESPACE,
    "-l",
    "app.kubernetes.io/name=bootc-operator-daemon",
    "-o",
    `jsonpath=${jsonpath}`,
  ]);
  return out.stdout.trim();
}

/** Pods running on `nodeName` (not being deleted), but for DaemonSet pods. */
export async function runningPods(cp: ControlPlane, nodeName: string): Promise<string[]> {
  const pods = await cp.client.resource<Pod>(Resources.pods).list({
    fieldSelector: `spec.nodeName=${nodeName}`,
  });
  return pods.items.filter((p) =>
    p.status?.phase === "Running" && !p.metadata?.deletionTimestamp &&
    !(p.metadata?.ownerReferences ?? []).some((o) => o.kind === "DaemonSet")
  ).map((p) => p.metadata!.name!);
}
