/**
 * The images `deno task build` produces, end to end: each is an OCI index of a linux/amd64 and a
 * linux/arm64 manifest; built twice from the same inputs they have the same digests (index and
 * both manifests); pushed to a real registry (token auth) with tools/image/push.ts, the registry
 * serves the index and each platform's manifest by digest, the operator's own resolver reports
 * both platforms and its digest rule picks the manifest of a node's architecture; pulled back by
 * digest and unpacked, each holds nothing beyond its runtime and libraries; the arm64
 * entrypoints answer `--help` under qemu-user (`qemu-aarch64-static`, from Debian's
 * qemu-user-static, which tests/prepare.sh --test-tools installs) in a chroot of the unpacked arm64 image;
 * and each amd64 entrypoint, run from the unpacked filesystem the way a runtime runs the pod (own
 * mount namespace, chroot, the image's user and environment), does its job:
 *
 * - the controller, as 65532 with a read-only root and a service-account token mounted like
 *   the Deployment's, talks TLS to a real API server and reports ready (caches synced, leader
 *   election running), resolves a pool's tag on a TLS registry whose CA it knows only from a
 *   bundle mounted over the image's `/etc/ssl/certs` (so Deno uses the image's CA store), then
 *   stops cleanly on SIGTERM;
 * - the daemon's `status`, as root like the DaemonSet, finds itself in another mount namespace
 *   than the "host" process (`--host-pid`), so it enters the host's with the image's own
 *   `nsenter` and runs the bootc simulator there, and prints the booted image's digest.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ensureBuild, TARGETS } from "../../tools/build.ts";
import { buildImages, type ImagesResult } from "../../tools/image/images.ts";
import { pushLayout } from "../../tools/image/push.ts";
import { IMAGE_NAMES, NONROOT_UID } from "../../tools/image/spec.ts";
import { RegistryClient } from "../../lib/registry/client.ts";
import { OCI_INDEX } from "../../lib/registry/media_types.ts";
import { YAML_PARSER_BUNDLE } from "../../lib/kube/config.ts";
import { entryRuns } from "../../lib/bootc/image_ref.ts";
import { RegistryImageResolver } from "../../controller/pollers/resolver.ts";
import { startControlPlane } from "../harness/control_plane.ts";
import { startRegistry } from "../harness/registry.ts";
import { freePort, startProcess, tailFile } from "../harness/process.ts";
import { waitFor } from "../harness/wait.ts";
import { SimulatedHost } from "../bootc_sim/mod.ts";
import { envObject, podArgv, pullAndUnpack, walk } from "./image_fs.ts";

const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const NAMESPACE = "bootc-operator";

Deno.test({
  name: "images: reproducible, pushed and pulled by digest, entrypoints run from the image",
  // Two image builds, a control plane and a registry on a loaded 2-core machine.
  sanitizeResources: true,
  sanitizeOps: true,
  async fn(t) {
    const work = await Deno.makeTempDir({ prefix: "bootc-images-test-" });
    const cleanups: (() => Promise<unknown>)[] = [];
    try {
      // The bundles are copied first: other test processes may rebuild dist/ meanwhile.
      await ensureBuild();
      const dist = `${work}/dist`;
      await Deno.mkdir(dist);
      for (const target of TARGETS) {
        const files = [target.bundle, ...(target.yamlBeside ? [YAML_PARSER_BUNDLE] : [])];
        for (const file of files) await Deno.copyFile(`${ROOT}/dist/${file}`, `${dist}/${file}`);
      }
      const quiet = () => {};
      const [first, cp] = await Promise.all([
        buildImages({ distDir: dist, outDir: `${work}/images-1`, targets: TARGETS, log: quiet }),
        startControlPlane({ kwok: false, controllerManager: false, scheduler: false, quiet: true }),
      ]);
      cleanups.push(() => cp.stop());
      const second = await buildImages({
        distDir: dist,
        outDir: `${work}/images-2`,
        targets: TARGETS,
        log: quiet,
      });

      await t.step("two builds from the same inputs have the same digests", async () => {
        assert.deepEqual(digests(second), digests(first));
        for (const name of ["controller", "daemon"]) {
          assert.deepEqual(
            await Deno.readTextFile(`${work}/images-2/${name}/index.json`),
            await Deno.readTextFile(`${work}/images-1/${name}/index.json`),
          );
        }
        const [controller, daemon] = first.images;
        for (const image of first.images) {
          assert.deepEqual(
            image.platforms.map((p) => `${p.platform.os}/${p.platform.architecture}`),
            ["linux/amd64", "linux/arm64"],
          );
          // The layout names one index; the index lists both manifests with their platforms.
          const layoutIndex = JSON.parse(await Deno.readTextFile(`${image.layout}/index.json`));
          assert.deepEqual(layoutIndex.manifests.map((m: { digest: string }) => m.digest), [
            image.digest,
          ]);
          assert.deepEqual(layoutIndex.manifests[0].mediaType, OCI_INDEX);
          const index = JSON.parse(
            await Deno.readTextFile(`${image.layout}/blobs/sha256/${image.digest.slice(7)}`),
          );
          assert.deepEqual(index.mediaType, OCI_INDEX);
          assert.deepEqual(
            index.manifests.map((m: { digest: string; platform: unknown }) => [
              m.digest,
              m.platform,
            ]),
            image.platforms.map((p) => [p.digest, p.platform]),
          );
        }
        // Per platform, the runtime and base layers are shared, so a node pulls them once.
        for (const i of [0, 1]) {
          assert.deepEqual(
            controller.platforms[i].layers.slice(0, 2),
            daemon.platforms[i].layers.slice(0, 2),
          );
        }
        assert.deepEqual(controller.reference, `${IMAGE_NAMES.controller}:latest`);
        assert.deepEqual(daemon.reference, `${IMAGE_NAMES.daemon}:latest`);
      });

      const registry = await startRegistry({ auth: "token", users: { pusher: "s3cret" } });
      cleanups.push(() => registry.stop());
      const dockerConfigJson = registry.dockerConfigJson("pusher");
      const client = new RegistryClient({ ...registry.clientOptions(), dockerConfigJson });
      cleanups.push(() => Promise.resolve(client.close()));
      const roots: Record<string, string> = {};
      const armRoots: Record<string, string> = {};
      const configs: Record<string, Awaited<ReturnType<typeof pullAndUnpack>>["config"]> = {};
      const armConfigs: Record<string, Awaited<ReturnType<typeof pullAndUnpack>>["config"]> = {};

      await t.step("push the index, resolve per platform, pull by digest, unpack", async () => {
        const resolver = new RegistryImageResolver({ insecureRegistries: [registry.host] });
        for (const image of first.images) {
          const repository = `${registry.host}/bootc-operator/${image.name}`;
          // Distinct blobs: the bundle layer (JavaScript) is the same on both platforms.
          const blobCount = new Set(
            image.platforms.flatMap((p) => [p.configDigest, ...p.layers.map((l) => l.digest)]),
          ).size;
          assert.deepEqual(image.platforms[0].layers.at(-1), image.platforms[1].layers.at(-1));
          const pushed = await pushLayout({
            layout: image.layout,
            reference: `${repository}:test`,
            insecureRegistries: [registry.host],
            dockerConfigJson,
          });
          assert.deepEqual(pushed.digest, image.digest);
          assert.deepEqual(pushed.manifests, image.platforms.map((p) => p.digest));
          assert.deepEqual(pushed.uploaded, blobCount);
          // Pushing again uploads nothing: every blob is there.
          const again = await pushLayout({
            layout: image.layout,
            reference: `${repository}:test`,
            insecureRegistries: [registry.host],
            dockerConfigJson,
          });
          assert.deepEqual([again.uploaded, again.existing], [0, blobCount]);
          // The registry serves the index and each platform's manifest by digest.
          const index = await client.fetchManifest(`${repository}@${image.digest}`);
          assert.deepEqual([index.digest, index.mediaType], [image.digest, OCI_INDEX]);
          // The controller's resolver sees both platforms; the one digest rule (daemon,
          // controller, plugin) takes a node's manifest only for the node's architecture.
          const resolved = await resolver.resolve(`${repository}:test`, { dockerConfigJson });
          assert.deepEqual(resolved.digest, image.digest);
          const platforms = image.platforms.map((p) => ({
            os: p.platform.os,
            architecture: p.platform.architecture,
            digest: p.digest,
          }));
          assert.deepEqual(resolved.platforms, platforms);
          const desired = { image: `${repository}@${image.digest}`, platforms: resolved.platforms };
          const [amd64, arm64] = image.platforms;
          const runs = (digest: string, architecture: string) =>
            entryRuns({ imageDigest: digest, architecture }, desired);
          assert.deepEqual(
            [runs(amd64.digest, "amd64"), runs(arm64.digest, "arm64")],
            [true, true],
          );
          assert.deepEqual(
            [runs(arm64.digest, "amd64"), runs(amd64.digest, "arm64")],
            [false, false],
          );

          roots[image.name] = `${work}/rootfs-${image.name}`;
          const pulled = await pullAndUnpack(client, repository, amd64.digest, roots[image.name]);
          configs[image.name] = pulled.config;
          assert.deepEqual(pulled.layerSizes, amd64.layers.map((l) => l.size));
          assert.deepEqual(pulled.config.config.User, `${NONROOT_UID}:${NONROOT_UID}`);
          assert.deepEqual(pulled.config.config.Entrypoint?.[0], "/usr/bin/deno");
          assert.deepEqual(pulled.config.architecture, "amd64");

          armRoots[image.name] = `${work}/rootfs-${image.name}-arm64`;
          const arm = await pullAndUnpack(client, repository, arm64.digest, armRoots[image.name]);
          armConfigs[image.name] = arm.config;
          assert.deepEqual(arm.layerSizes, arm64.layers.map((l) => l.size));
          assert.deepEqual(arm.config.architecture, "arm64");
          assert.deepEqual(arm.config.config.Entrypoint, pulled.config.config.Entrypoint);
        }
        assert.deepEqual(configs.daemon.config.Cmd, ["run"]);
      });

      await t.step(
        "the filesystems hold the runtime, libraries and certificates only",
        async () => {
          const all = [...Object.entries(roots), ...Object.entries(armRoots)];
          for (const [name, root] of all) {
            const entries = await walk(root);
            const executables = entries
              .filter((e) => e.kind === "file" && (e.mode & 0o111) && !/\.so(\.|$)/.test(e.path))
              .map((e) => e.path);
            assert.deepEqual(
              executables,
              name === "daemon" ? ["usr/bin/deno", "usr/bin/nsenter"] : ["usr/bin/deno"],
            );
            for (
              const shell of ["bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/env", "bin/busybox"]
            ) {
              assert.ok(!entries.some((e) => e.path === shell), `${name} has ${shell}`);
            }
            assert.ok(entries.some((e) => e.path === "etc/ssl/certs/ca-certificates.crt"));
            // The daemon's bundle loads its YAML parser (a kubeconfig file) from beside it.
            assert.equal(
              entries.some((e) => e.path === `app/${YAML_PARSER_BUNDLE}`),
              name === "daemon",
              `${name}: app/${YAML_PARSER_BUNDLE}`,
            );
            const home = entries.find((e) => e.path === "home/nonroot");
            assert.deepEqual(home?.mode, 0o700);
            assert.deepEqual((await Deno.stat(`${root}/home/nonroot`)).uid, NONROOT_UID);
            assert.deepEqual((await Deno.stat(`${root}/tmp`)).mode! & 0o7777, 0o1777);
          }
        },
      );

      await t.step(
        "the arm64 entrypoints answer --help under qemu-user in a chroot of the arm64 image",
        async () => {
          const qemu = await qemuAarch64();
          await Promise.all(
            Object.entries(armRoots).map(async ([name, root]) => {
              // The runtime really is an AArch64 executable (ELF e_machine 183).
              const elf = await Deno.readFile(`${root}/usr/bin/deno`);
              assert.deepEqual(new DataView(elf.buffer).getUint16(18, true), 183);
              // qemu-aarch64-static is static, so it runs inside the chroot without binfmt_misc.
              await Deno.copyFile(qemu, `${root}/qemu-aarch64-static`);
              await Deno.chmod(`${root}/qemu-aarch64-static`, 0o755);
              const config = armConfigs[name].config;
              const argv = await podArgv({
                root,
                user: config.User!,
                command: ["/qemu-aarch64-static", ...config.Entrypoint!, "--help"],
              });
              const out = await new Deno.Command(argv[0], {
                args: argv.slice(1),
                env: envObject(config.Env ?? []),
                clearEnv: true,
                stdin: "null",
                stdout: "piped",
                stderr: "piped",
                signal: AbortSignal.timeout(240_000),
              }).output();
              const text = new TextDecoder().decode(out.stdout) +
                new TextDecoder().decode(out.stderr);
              assert.deepEqual(out.code, 0, `${name} --help under qemu:\n${text}`);
              assert.match(text, new RegExp(`Usage: ${name}`), text);
            }),
          );
        },
      );

      await t.step(
        "the controller runs as 65532 with a read-only root, gets ready, trusts the image's CAs",
        async () => {
          for await (const entry of Deno.readDir(`${ROOT}/crds`)) {
            await cp.applyYaml(`${ROOT}/crds/${entry.name}`);
          }
          await cp.applyYaml(`${ROOT}/manifests/namespace.yaml`);
          await cp.applyYaml(`${ROOT}/manifests/controller-rbac.yaml`);
          const token = await cp.mintToken({
            namespace: NAMESPACE,
            serviceAccount: "bootc-operator-controller",
          });
          const sa = `${work}/serviceaccount`;
          await Deno.mkdir(sa);
          await Deno.writeTextFile(`${sa}/token`, token);
          await Deno.copyFile(cp.caCertPath, `${sa}/ca.crt`);
          await Deno.writeTextFile(`${sa}/namespace`, NAMESPACE);
          await Deno.chmod(sa, 0o755);
          for (const f of ["token", "ca.crt", "namespace"]) await Deno.chmod(`${sa}/${f}`, 0o644);

          // A registry whose certificate only a private CA vouches for, and a CA bundle holding
          // the image's certificates plus that CA, mounted over the image's /etc/ssl/certs the way
          // a cluster mounts a ConfigMap: the controller must trust it without --registry-ca-file.
          const tlsRegistry = await startRegistry({ tls: true });
          cleanups.push(() => tlsRegistry.stop());
          const os = await tlsRegistry.pushImage({
            repository: "bootc/os",
            tag: "v1",
            version: "1",
          });
          const certs = `${work}/certs`;
          await Deno.mkdir(certs);
          await Deno.writeTextFile(
            `${certs}/ca-certificates.crt`,
            await Deno.readTextFile(`${roots.controller}/etc/ssl/certs/ca-certificates.crt`) +
              tlsRegistry.caCertPem!,
          );
          await Deno.chmod(certs, 0o755);
          await Deno.chmod(`${certs}/ca-certificates.crt`, 0o644);

          const config = configs.controller.config;
          const port = freePort();
          const api = new URL(cp.apiServerUrl);
          const argv = await podArgv({
            root: roots.controller,
            user: config.User!,
            readOnlyRoot: true,
            binds: [
              { source: sa, target: "/var/run/secrets/kubernetes.io/serviceaccount" },
              { source: certs, target: "/etc/ssl/certs" },
            ],
            // The Deployment's arguments, with the probe port moved off 8080.
            command: [
              ...config.Entrypoint!,
              `--namespace=${NAMESPACE}`,
              "--leader-elect=true",
              `--metrics-addr=127.0.0.1:${port}`,
            ],
          });
          // `env -i`: the image's environment and the pod's, nothing of this process's.
          const env = [
            ...(config.Env ?? []),
            `KUBERNETES_SERVICE_HOST=${api.hostname}`,
            `KUBERNETES_SERVICE_PORT=${api.port}`,
            "POD_NAME=controller-from-image",
            `POD_NAMESPACE=${NAMESPACE}`,
          ];
          const controller = startProcess({
            name: "controller-from-image",
            command: "/usr/bin/env",
            args: ["-i", ...env, ...argv],
            logPath: `${work}/controller.log`,
          });
          cleanups.push(() => controller.stop());
          const get = async (path: string) => {
            const response = await fetch(`http://127.0.0.1:${port}${path}`);
            return { status: response.status, text: await response.text() };
          };
          await waitFor(async () => {
            if (!controller.running) {
              throw new Error(`controller exited:\n${await tailFile(controller.logPath)}`);
            }
            try {
              return (await get("/readyz")).status === 200;
            } catch {
              return false;
            }
          }, {
            timeoutMs: 90_000,
            intervalMs: 250,
            message: "the controller from the image ready",
          });
          assert.deepEqual((await get("/healthz")).status, 200);
          assert.match((await get("/metrics")).text, /bootc_/);
          // The leader-election Lease names this process's identity (from its hostname).
          await waitFor(async () => {
            const lease = await cp.client.request({
              method: "GET",
              path: `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases/` +
                "bootc-operator-controller",
            }).catch(() => undefined) as { spec?: { holderIdentity?: string } } | undefined;
            return lease?.spec?.holderIdentity?.startsWith(Deno.hostname()) ?? false;
          }, { timeoutMs: 60_000, intervalMs: 250, message: "the controller holding the Lease" });
          // A pool on the TLS registry: the tag resolves only if the image's CA store is used.
          // JSON is YAML; applyYaml takes text with newlines.
          await cp.applyYaml(JSON.stringify(
            {
              apiVersion: "node.bootc.dev/v1alpha1",
              kind: "BootcNodePool",
              metadata: { name: "image-test" },
              spec: {
                nodeSelector: { matchLabels: { "image-test": "none" } },
                image: { ref: `${tlsRegistry.host}/bootc/os:v1` },
              },
            },
            null,
            2,
          ));
          await waitFor(async () => {
            const pool = await cp.client.request({
              method: "GET",
              path: "/apis/node.bootc.dev/v1alpha1/bootcnodepools/image-test",
            }) as { status?: { targetDigest?: string } };
            return pool.status?.targetDigest === os.digest;
          }, { timeoutMs: 60_000, intervalMs: 250, message: "the pool's tag resolved over TLS" });
          const status = await controller.stop({ graceMs: 30_000 });
          const log = await tailFile(controller.logPath, 200);
          assert.deepEqual(status.code, 0, log);
          assert.match(log, /controller stopped/);
        },
      );

      await t.step(
        "the daemon's status enters the host namespace with the image's nsenter",
        async () => {
          const os = await registry.pushImage({
            repository: "bootc/os",
            tag: "v1",
            version: "1.0",
          });
          const host = await SimulatedHost.create({
            image: `${registry.host}/bootc/os:v1`,
            etcAuth: JSON.parse(dockerConfigJson),
          });
          cleanups.push(() => host.destroy());
          const config = configs.daemon.config;
          const argv = await podArgv({
            root: roots.daemon,
            // The DaemonSet runs the daemon as root (privileged, hostPID).
            user: "0:0",
            command: [
              ...config.Entrypoint!,
              "status",
              "--desired-image",
              `${registry.host}/bootc/os:v1`,
              // This test process stands in for the host's PID 1: its mount namespace is the host's.
              "--host-pid",
              String(Deno.pid),
              "--bootc-command",
              host.command().join(" "),
              "--systemctl-command",
              host.systemctlCommand().join(" "),
            ],
          });
          const out = await new Deno.Command(argv[0], {
            args: argv.slice(1),
            env: envObject(config.Env ?? []),
            clearEnv: true,
            stdin: "null",
            stdout: "piped",
            stderr: "piped",
            signal: AbortSignal.timeout(60_000),
          }).output();
          const stdout = new TextDecoder().decode(out.stdout);
          const stderr = new TextDecoder().decode(out.stderr);
          assert.deepEqual(out.code, 0, stderr);
          // Detected, not configured: another mount namespace than the host's, so nsenter.
          assert.match(stderr, /"mode":"nsenter"/);
          assert.match(stderr, /nsenter --mount=\/proc\/\d+\/ns\/mnt/);
          const status = JSON.parse(stdout);
          // bootc status and bootc --version answered through nsenter, from the simulated host.
          assert.deepEqual(status.booted?.imageDigest, os.digest, stdout);
          assert.deepEqual(status.booted?.image, `${registry.host}/bootc/os:v1`);
          assert.deepEqual(status.bootcVersion, "1.16.10");
        },
      );
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});

/** Each image's index digest and its platforms' manifest digests. */
function digests(result: ImagesResult): Record<string, string[]> {
  return Object.fromEntries(
    result.images.map((i) => [i.name, [i.digest, ...i.platforms.map((p) => p.digest)]]),
  );
}

/** Debian's `qemu-aarch64-static` (qemu-user-static); its absence fails the test. */
async function qemuAarch64(): Promise<string> {
  const path = "/usr/bin/qemu-aarch64-static";
  try {
    await Deno.stat(path);
    return path;
  } catch {
    throw new Error(
      `${path} is missing: the arm64 images are checked under qemu-user. Run tests/prepare.sh --test-tools ` +
        "(it installs Debian's qemu-user-static) or `apt-get install qemu-user-static`.",
    );
  }
}
