/**
 * Each executable runs with exactly the Deno permissions it ships with (tools/build.ts), and
 * what it was not given is refused by Deno itself. The controller, started as built, is handed
 * a kubeconfig whose credential plugin would run a command: Deno refuses the subprocess
 * (the controller has no `--allow-run`), so the command never runs.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { CONTROLLER_PERMISSIONS, ensureBuild } from "../../tools/build.ts";

Deno.test("permissions: the controller cannot run a command, even one its kubeconfig names", async () => {
  const executables = await ensureBuild({ only: ["controller"] });
  const dir = await Deno.makeTempDir({ prefix: "perm-controller-" });
  try {
    const marker = `${dir}/spawned`;
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "c",
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        users: [{
          name: "u",
          user: {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: "/bin/sh",
              args: ["-c", `touch ${marker}`],
            },
          },
        }],
      }),
    );
    const [command, ...prefix] = executables.controller;
    const child = new Deno.Command(command, {
      args: [...prefix, "--kubeconfig", kubeconfig, "--metrics-addr", "127.0.0.1:0"],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    // It retries its API calls for ever: read its log until Deno's refusal shows, then stop it.
    const refusal = /NotCapable: Requires run access to \\?"\/bin\/sh/;
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    let text = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      if (refusal.test(text)) break;
    }
    try {
      child.kill("SIGKILL");
    } catch {
      // it had exited already
    }
    clearTimeout(timer);
    await child.status;
    assert.match(text, refusal, text.slice(-2000));
    await assert.rejects(Deno.stat(marker), Deno.errors.NotFound, "the command did not run");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("permissions: the controller may not load native code, run anything or write", () => {
  const perms = CONTROLLER_PERMISSIONS;
  assert.ok(!perms.some((p) => /^--allow-(all|ffi|import)\b|^-A$/.test(p)), perms.join(" "));
  assert.ok(!CONTROLLER_PERMISSIONS.some((p) => /^--allow-(write|run)\b/.test(p)));
  // Every grant of the controller that takes a list names one.
  for (const kind of ["env", "sys"]) {
    assert.ok(CONTROLLER_PERMISSIONS.some((p) => p.startsWith(`--allow-${kind}=`)), kind);
  }
});
