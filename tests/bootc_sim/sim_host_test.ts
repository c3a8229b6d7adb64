/**
 * The simulator run as a process: digests of multi-arch images, credentials, containers, status
 * failures, composefs hosts, the systemctl emulation, and how fast `status` answers.
 */
import assert from "node:assert/strict";
import { startRegistry } from "../harness/registry.ts";
import { SimulatedHost } from "./host.ts";
import { AUTO_UPDATE_TIMER } from "./systemctl.ts";
import { parseStatus, runBootc } from "./testing.ts";

type Obj = Record<string, unknown>;
const at = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v as Obj | null | undefined)?.[k], o);

async function statusJson(host: SimulatedHost, env?: Record<string, string>): Promise<Obj> {
  const r = await runBootc(host, ["status", "--format=json", "--format-version=1"], { env });
  assert.equal(r.code, 0, r.stderr);
  return parseStatus(r.stdout);
}

Deno.test("bootc simulator: digests, multi-arch indexes, containers, failures, composefs", async (t) => {
  const reg = await startRegistry();
  try {
    const v1 = await reg.pushImage({ repository: "os", tag: "v1", version: "1" });
    const multi = await reg.pushIndex({
      repository: "os",
      tag: "multi",
      images: [{ architecture: "amd64", version: "2" }, { architecture: "arm64", version: "2" }],
    });
    const digestOf = (arch: string) => multi.platforms.find((p) => p.architecture === arch)!.digest;

    await t.step(
      "an index resolves to the host architecture's manifest; the pullspec stays as passed",
      async () => {
        const byDigest = `${reg.host}/os@${multi.digest}`;
        const arm = await SimulatedHost.create({ image: byDigest, architecture: "arm64" });
        const amd = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
        try {
          const doc = await statusJson(arm);
          assert.equal(at(doc, "status", "booted", "image", "imageDigest"), digestOf("arm64"));
          assert.equal(at(doc, "status", "booted", "image", "architecture"), "arm64");
          assert.equal(at(doc, "status", "booted", "image", "image", "image"), byDigest);
          assert.notEqual(at(doc, "status", "booted", "image", "imageDigest"), multi.digest);
          assert.equal((await runBootc(amd, ["switch", `${reg.host}/os:multi`])).code, 0);
          assert.equal(
            at(await statusJson(amd), "status", "staged", "image", "imageDigest"),
            digestOf("amd64"),
          );
          await amd.updateSettings({ architecture: "s390x" });
          const r = await runBootc(amd, ["switch", byDigest]);
          assert.equal(r.code, 1);
          assert.match(r.stderr, /no image found in image index for architecture "s390x"/);
        } finally {
          await arm.destroy();
          await amd.destroy();
        }
      },
    );

    await t.step("in a container bootc reports the empty host with exit code 0", async () => {
      const host = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
      try {
        const env = { container: "oci" };
        const doc = await statusJson(host, env);
        assert.equal(at(doc, "status", "booted"), null);
        assert.equal(at(doc, "spec", "image"), null);
        const sw = await runBootc(host, ["switch", `${reg.host}/os:multi`], { env });
        assert.equal(sw.code, 1);
        assert.match(sw.stderr, /^error: .*Detected container/);
        await Deno.writeTextFile(`${host.root}/run/.containerenv`, "");
        assert.equal(at(await statusJson(host), "status", "booted"), null);
        await Deno.remove(`${host.root}/run/.containerenv`);
        assert.equal(
          at(await statusJson(host), "status", "booted", "image", "imageDigest"),
          v1.digest,
        );
        await host.setNotBootc(true);
        assert.equal(at(await statusJson(host), "status", "booted"), null);
        const human = await runBootc(host, ["status", "--format=humanreadable"]);
        assert.equal(human.stdout, "System is not deployed via bootc.\n");
      } finally {
        await host.destroy();
      }
    });

    await t.step(
      "an incompatible (locally layered) booted entry has no image and no spec",
      async () => {
        const host = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
        try {
          await host.editState((s) => ({ ...s, booted: { ...s.booted!, incompatible: true } }));
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "booted", "incompatible"), true);
          assert.equal(at(doc, "status", "booted", "image"), null);
          assert.equal(at(doc, "spec", "image"), null);
          assert.equal(at(doc, "status", "type"), null);
          const up = await runBootc(host, ["upgrade"]);
          assert.equal(up.code, 1);
          assert.match(up.stderr, /^error: Upgrading: /);
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step("a status failure exits 1 with one error: line", async () => {
      const host = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
      try {
        await host.setStatusFailure("Timed out waiting for /boot automount");
        const r = await runBootc(host, ["status", "--format=json"]);
        assert.deepEqual([r.code, r.stdout], [1, ""]);
        assert.equal(r.stderr, "error: Status: Timed out waiting for /boot automount\n");
        await host.setStatusFailure(null);
        assert.equal((await runBootc(host, ["status", "--format=json"])).code, 0);
        const bad = await runBootc(host, ["status", "--format=json", "--format-version=2"]);
        assert.deepEqual([bad.code, bad.stderr], [
          1,
          "error: Status: Unsupported format version: 2\n",
        ]);
      } finally {
        await host.destroy();
      }
    });

    await t.step(
      "composefs hosts have no /ostree/bootc; deployments appear under /sysroot/state/deploy",
      async () => {
        const host = await SimulatedHost.create({ image: `${reg.host}/os:v1`, composefs: true });
        try {
          assert.equal(await host.bootcDirMtime(), null);
          const list = async () => {
            const names = [];
            for await (const e of Deno.readDir(host.paths.composefsDeployDir)) names.push(e.name);
            return names.sort();
          };
          assert.equal((await list()).length, 1);
          assert.equal((await runBootc(host, ["switch", `${reg.host}/os:multi`])).code, 0);
          assert.equal((await list()).length, 2);
          const doc = await statusJson(host);
          assert.equal(at(doc, "status", "staged", "ostree"), null);
          assert.ok(
            (await list()).includes(at(doc, "status", "staged", "composefs", "verity") as string),
          );
          await Deno.lstat(`${host.root}/ostree`).then(
            () => assert.fail("/ostree must not exist on a composefs host"),
            (e) => assert.ok(e instanceof Deno.errors.NotFound),
          );
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step(
      "systemctl: the auto-update timer is enabled until masked for the runtime",
      async () => {
        const host = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
        try {
          const ctl = (...args: string[]) => runBootc(host, ["systemctl", ...args]);
          assert.deepEqual(
            [
              (await ctl("is-enabled", AUTO_UPDATE_TIMER)).stdout,
              (await ctl("is-active", AUTO_UPDATE_TIMER)).stdout,
            ],
            ["enabled\n", "active\n"],
          );
          const mask = await ctl("mask", "--runtime", "--now", AUTO_UPDATE_TIMER);
          assert.equal(mask.code, 0);
          const enabled = await ctl("is-enabled", AUTO_UPDATE_TIMER);
          assert.deepEqual([enabled.stdout, enabled.code], ["masked-runtime\n", 1]);
          const active = await ctl("is-active", AUTO_UPDATE_TIMER);
          assert.deepEqual([active.stdout, active.code], ["inactive\n", 3]);
          await host.reboot({ soft: true });
          assert.equal((await ctl("is-enabled", AUTO_UPDATE_TIMER)).stdout, "masked-runtime\n");
          await host.reboot();
          assert.equal((await ctl("is-active", AUTO_UPDATE_TIMER)).stdout, "active\n");
        } finally {
          await host.destroy();
        }
      },
    );

    await t.step("status answers quickly (it is spawned for every bootc call)", async () => {
      const host = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
      try {
        const times = [];
        for (let i = 0; i < 5; i++) {
          const r = await runBootc(host, ["status", "--format=json", "--format-version=1"]);
          assert.equal(r.code, 0);
          times.push(r.ms);
        }
        const avg = times.reduce((a, b) => a + b, 0) / times.length;
        console.log(
          `bootc_sim: status takes ${avg.toFixed(0)} ms on average (${
            times.map((t) => t.toFixed(0)).join(", ")
          })`,
        );
        assert.ok(avg < 3000, `status took ${avg} ms`);
      } finally {
        await host.destroy();
      }
    });
  } finally {
    await reg.stop();
  }
});

Deno.test("bootc simulator: pulls with the host's credentials in bootc's file order", async (t) => {
  const reg = await startRegistry({ auth: "htpasswd", users: { puller: "s3cret" } });
  try {
    const v2 = await reg.pushImage({ repository: "os", tag: "v2", version: "2" });
    await reg.pushImage({ repository: "os", tag: "v1", version: "1" });
    const good = JSON.parse(reg.dockerConfigJson("puller"));
    const bad = JSON.parse(reg.dockerConfigJson("puller", "wrong"));
    const host = await SimulatedHost.create({ image: `${reg.host}/os:v1`, etcAuth: good });
    try {
      await t.step("no credentials: unauthorized", async () => {
        await Deno.remove(`${host.root}/etc/ostree/auth.json`);
        const r = await runBootc(host, ["switch", "--download-only", `${reg.host}/os:v2`]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^error: Switching: Pulling: .*unauthorized/);
      });
      await t.step("/usr/lib/ostree/auth.json is the last fallback", async () => {
        await host.writeAuthFile("usr", good);
        const r = await runBootc(host, ["switch", "--download-only", `${reg.host}/os:v2`]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(
          at(await statusJson(host), "status", "staged", "image", "imageDigest"),
          v2.digest,
        );
      });
      await t.step(
        "/run/ostree/auth.json wins over /etc and does not survive a reboot",
        async () => {
          await host.writeAuthFile("etc", good);
          await host.writeAuthFile("run", bad);
          const r = await runBootc(host, ["switch", `${reg.host}/os:v1`]);
          assert.equal(r.code, 1, "the wrong /run credentials are used");
          await host.reboot();
          const after = await runBootc(host, ["switch", `${reg.host}/os:v1`]);
          assert.equal(after.stderr, "");
          assert.equal(after.code, 0);
        },
      );
    } finally {
      await host.destroy();
    }
  } finally {
    await reg.stop();
  }
});

Deno.test("bootc simulator: a TLS registry is trusted only with the host's extra CA", async () => {
  const reg = await startRegistry({ tls: true });
  try {
    const v2 = await reg.pushImage({ repository: "os", tag: "v2", version: "2" });
    await reg.pushImage({ repository: "os", tag: "v1", version: "1" });
    const host = await SimulatedHost.create({
      image: `${reg.host}/os:v1`,
      caCertPem: reg.caCertPem!,
    });
    try {
      assert.equal((await runBootc(host, ["switch", `${reg.host}/os:v2`])).code, 0);
      assert.equal(
        at(await statusJson(host), "status", "staged", "image", "imageDigest"),
        v2.digest,
      );
      await host.updateSettings({ caCertPem: null });
      const r = await runBootc(host, ["switch", `${reg.host}/os:v1`]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^error: Switching: Pulling: .*pinging container registry/);
    } finally {
      await host.destroy();
    }
  } finally {
    await reg.stop();
  }
});
