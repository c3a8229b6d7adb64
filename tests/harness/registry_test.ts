import assert from "node:assert/strict";
import { startRegistry, tarFile } from "./registry.ts";
import { parseScope } from "./token_issuer.ts";

Deno.test("tarFile writes an archive that tar can list and extract", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/layer.tar`, tarFile("usr/lib/os-release", "VERSION_ID=7\n"));
    const out = await new Deno.Command("tar", {
      args: ["-xvf", `${dir}/layer.tar`, "-C", dir],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "usr/lib/os-release");
    assert.equal(await Deno.readTextFile(`${dir}/usr/lib/os-release`), "VERSION_ID=7\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseScope splits type, name and actions", () => {
  assert.deepEqual(parseScope("repository:org/os:pull,push"), {
    type: "repository",
    name: "org/os",
    actions: ["pull", "push"],
  });
  assert.deepEqual(parseScope("registry:catalog:*"), {
    type: "registry",
    name: "catalog",
    actions: ["*"],
  });
  assert.equal(parseScope("nonsense"), undefined);
});

Deno.test("startRegistry serves pushes and stop() kills it and removes its folder", async () => {
  const registry = await startRegistry();
  const pushed = await registry.pushImage({ repository: "os", tag: "v1", version: "1" });
  // Equal inputs give equal digests (fixed `created`), so tests can predict them.
  const again = await registry.pushImage({ repository: "os", tag: "v1-again", version: "1" });
  assert.equal(again.digest, pushed.digest);
  const response = await fetch(`${registry.url}/v2/os/manifests/v1`, {
    method: "HEAD",
    headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
  });
  await response.body?.cancel();
  assert.equal(response.headers.get("docker-content-digest"), pushed.digest);
  assert.ok((await Deno.stat(`${registry.dir}/registry.log`)).isFile);
  await registry.stop();
  await registry.stop(); // idempotent
  await assert.rejects(fetch(`${registry.url}/v2/`), TypeError);
  await assert.rejects(Deno.stat(registry.dir), Deno.errors.NotFound);
});

Deno.test("token issuer: Basic users get their scopes, wrong passwords 401, anonymous gets no access", async () => {
  await using registry = await startRegistry({ auth: "token", users: { bob: "pw" } });
  const issuer = registry.tokenIssuer!;
  const ask = async (authorization?: string) => {
    const url = new URL(issuer.realm);
    url.searchParams.set("service", issuer.service);
    url.searchParams.set("scope", "repository:os:pull");
    const response = await fetch(url, authorization ? { headers: { authorization } } : {});
    const body = await response.json();
    const claims = body.token
      ? JSON.parse(atob(body.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")))
      : undefined;
    return { status: response.status, claims };
  };
  const bob = await ask(`Basic ${btoa("bob:pw")}`);
  assert.equal(bob.status, 200);
  assert.deepEqual(bob.claims.access, [{ type: "repository", name: "os", actions: ["pull"] }]);
  assert.equal(bob.claims.aud, issuer.service);
  assert.equal((await ask(`Basic ${btoa("bob:nope")}`)).status, 401);
  const anonymous = await ask();
  assert.equal(anonymous.status, 200);
  assert.deepEqual(anonymous.claims.access, []);
});
