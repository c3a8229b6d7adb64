import assert from "node:assert/strict";
import type { ISecret } from "kubernetes-models/v1/Secret";
import { ForbiddenError } from "../lib/kube/errors.ts";
import { AUTH_FILE, PullSecretInstaller, writeFileAtomic } from "./pull_secret.ts";

const ref = { name: "regcred", namespace: "ops" };
const spec = (hash?: string, withRef = true) => ({
  desiredImage: "r/os@sha256:" + "a".repeat(64),
  desiredImageState: "Staged" as const,
  rebootPolicy: "RebootOnly" as const,
  ...(withRef ? { pullSecretRef: ref, pullSecretHash: hash } : {}),
});

function secret(content: string, type = "kubernetes.io/dockerconfigjson"): ISecret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "regcred", namespace: "ops" },
    type,
    data: { ".dockerconfigjson": btoa(content) },
  };
}

Deno.test("PullSecretInstaller: one GET per reference/hash, backoff after failures", async () => {
  const root = await Deno.makeTempDir();
  let current: ISecret | undefined;
  const gets: string[] = [];
  const installer = new PullSecretInstaller({
    hostRoot: root,
    retry: { initialMs: 1_000, maxMs: 4_000 },
    getSecret: (ns, name) => {
      gets.push(`${ns}/${name}`);
      return Promise.resolve(current);
    },
  });
  const t0 = new Date("2026-01-01T00:00:00Z");
  const at = (ms: number) => new Date(t0.getTime() + ms);
  try {
    let r = await installer.sync(spec("h1"), t0);
    assert.deepEqual(r, { outcome: "failed", error: "pull secret ops/regcred: Secret not found" });
    r = await installer.sync(spec("h1"), at(500));
    assert.equal(r.outcome, "failed");
    assert.equal(gets.length, 1, "no GET during backoff");
    assert.deepEqual(installer.retryAt, at(1_000));
    current = secret('{"auths":{}}');
    r = await installer.sync(spec("h1"), at(1_000));
    assert.equal(r.outcome, "written");
    assert.equal(await Deno.readTextFile(`${root}/${AUTH_FILE}`), '{"auths":{}}');
    assert.equal((await Deno.stat(`${root}/${AUTH_FILE}`)).mode! & 0o777, 0o600);
    assert.equal((await installer.sync(spec("h1"), at(2_000))).outcome, "unchanged");
    assert.equal(gets.length, 2);
    current = secret("not json");
    r = await installer.sync(spec("h2"), at(3_000));
    assert.match(r.error!, /ops\/regcred is not a valid \.dockerconfigjson: it is not JSON/);
    assert.equal(await Deno.readTextFile(`${root}/${AUTH_FILE}`), '{"auths":{}}', "kept");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("PullSecretInstaller removes only the file it wrote", async () => {
  const root = await Deno.makeTempDir();
  const installer = new PullSecretInstaller({
    hostRoot: root,
    getSecret: () => Promise.resolve(secret('{"auths":{"a":{}}}')),
  });
  try {
    // An admin's own file is left alone when no reference was ever set.
    await Deno.mkdir(`${root}/run/ostree`, { recursive: true });
    await Deno.writeTextFile(`${root}/${AUTH_FILE}`, "admin");
    assert.equal((await installer.sync(spec(undefined, false))).outcome, "unchanged");
    assert.equal(await Deno.readTextFile(`${root}/${AUTH_FILE}`), "admin");
    assert.equal((await installer.sync(spec("h1"))).outcome, "written");
    assert.equal((await installer.sync(spec(undefined, false))).outcome, "removed");
    await assert.rejects(() => Deno.stat(`${root}/${AUTH_FILE}`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("writeFileAtomic replaces the file in one step and leaves no temp file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeFileAtomic(`${dir}/f`, "one", 0o600);
    await writeFileAtomic(`${dir}/f`, "two", 0o600);
    assert.equal(await Deno.readTextFile(`${dir}/f`), "two");
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["f"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PullSecretInstaller never replaces a good auth file with a bad Secret", async () => {
  const root = await Deno.makeTempDir();
  const good = '{"auths":{"r.example":{"auth":"' + btoa("alice:pw") + '"}}}';
  let current: ISecret | Error = secret(good);
  const installer = new PullSecretInstaller({
    hostRoot: root,
    retry: { initialMs: 1, maxMs: 1 },
    getSecret: () => current instanceof Error ? Promise.reject(current) : Promise.resolve(current),
  });
  const t0 = new Date("2026-01-01T00:00:00Z");
  let n = 0;
  try {
    assert.equal((await installer.sync(spec("good"), t0)).outcome, "written");
    const bad: [ISecret | Error, RegExp][] = [
      [
        secret(good, "Opaque"),
        /^pull secret ops\/regcred has type Opaque; only kubernetes\.io\/dockerconfigjson/,
      ],
      [
        { ...secret(good), data: { other: btoa("x") } },
        /^pull secret ops\/regcred has no \.dockerconfigjson key$/,
      ],
      [secret('{"auths":"x"}'), /is not a valid \.dockerconfigjson: it has no "auths" object$/],
      [secret("[]"), /is not a valid \.dockerconfigjson: it is not a JSON object$/],
      [
        secret('{"auths":{"r.example":{"auth":"%%%"}}}'),
        /the "auth" of "r\.example" is not base64 of "username:password"$/,
      ],
      [
        new ForbiddenError({ status: 403, reason: "Forbidden", message: "forbidden" }),
        /^pull secret ops\/regcred: the daemon may not read it/,
      ],
    ];
    for (const [value, want] of bad) {
      current = value;
      // A new hash each time, as the controller sets it when the Secret changes.
      const r = await installer.sync(spec(`bad-${++n}`), new Date(t0.getTime() + n * 1000));
      assert.equal(r.outcome, "failed", String(want));
      assert.match(r.error!, want);
      assert.equal(await Deno.readTextFile(`${root}/${AUTH_FILE}`), good, "the good file stays");
    }
    // Fixed: the next hash installs it.
    const fixed = '{"auths":{"r.example":{"auth":"' + btoa("alice:new") + '"}}}';
    current = secret(fixed);
    const r = await installer.sync(spec("fixed"), new Date(t0.getTime() + 60_000));
    assert.equal(r.outcome, "written");
    assert.equal(await Deno.readTextFile(`${root}/${AUTH_FILE}`), fixed);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
