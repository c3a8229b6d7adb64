/**
 * `kubectl bootc version` for real: the built plugin (its commit stamped by the build) against
 * a real API server holding the controller Deployment exactly as manifests/ install it.
 */
import assert from "node:assert/strict";
import { ensureBuild, gitCommit } from "../../tools/build.ts";
import { VERSION } from "../../lib/version.ts";
import { startControlPlane } from "../harness/control_plane.ts";
import { parse } from "yaml";

const root = new URL("../../", import.meta.url).pathname;
const decoder = new TextDecoder();

Deno.test("kubectl bootc version: the plugin's build and the installed controller's version", async () => {
  const [exe, cp, commit] = await Promise.all([
    ensureBuild(),
    startControlPlane({ kwok: false, controllerManager: false, scheduler: false, quiet: true }),
    gitCommit(root),
  ]);
  try {
    const plugin = (args: string[]) =>
      new Deno.Command(exe.plugin[0], {
        args: [...exe.plugin.slice(1), "--kubeconfig", cp.kubeconfigPath, ...args],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();

    // Not installed yet: the plugin's own version, the controller's unknown, exit 0.
    const before = await plugin(["version", "-o", "json"]);
    assert.equal(before.code, 0, decoder.decode(before.stderr));
    const none = JSON.parse(decoder.decode(before.stdout));
    assert.deepEqual(none.plugin, { version: VERSION, commit });
    assert.equal(none.controller.version, null);
    assert.match(none.controller.error, /not found/);

    const manifest = parse(await Deno.readTextFile(`${root}manifests/controller.yaml`));
    const image: string = manifest.spec.template.spec.containers[0].image;
    await cp.applyYaml(`${root}manifests/namespace.yaml`);
    await cp.applyYaml(`${root}manifests/controller.yaml`);
    const [json, text] = await Promise.all([plugin(["version", "-ojson"]), plugin(["version"])]);
    assert.equal(json.code, 0, decoder.decode(json.stderr));
    assert.deepEqual(JSON.parse(decoder.decode(json.stdout)), {
      plugin: { version: VERSION, commit },
      controller: {
        namespace: "bootc-operator",
        deployment: "bootc-operator-controller",
        version: VERSION,
        image,
        error: null,
      },
    });
    assert.equal(text.code, 0);
    assert.equal(
      decoder.decode(text.stdout),
      `plugin      ${VERSION} (commit ${commit})\n` +
        `controller  ${VERSION} (bootc-operator/bootc-operator-controller, image ${image})\n`,
    );
    // Another namespace: nothing there.
    const elsewhere = await plugin(["version", "-n", "default", "-o", "json"]);
    assert.equal(JSON.parse(decoder.decode(elsewhere.stdout)).controller.version, null);
  } finally {
    await cp.stop();
  }
});
