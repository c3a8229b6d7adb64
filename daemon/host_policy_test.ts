import assert from "node:assert/strict";
import type { BootcNodeSpec } from "../lib/api/schema.ts";
import {
  HostPolicyInstaller,
  KEY_DIR,
  OWNED_FILE,
  POLICY_FILE,
  REGISTRIES_D_FILE,
  wantedPolicy,
} from "./host_policy.ts";

const IMAGE = `registry.example.com/os/node@sha256:${"a".repeat(64)}`;
const PEM = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n";
const USER_POLICY = {
  default: [{ type: "insecureAcceptAnything" }],
  transports: {
    docker: {
      "registry.example.com/os/node": [{ type: "reject" }],
      "quay.io/other": [{ type: "insecureAcceptAnything" }],
    },
    "docker-daemon": { "": [{ type: "insecureAcceptAnything" }] },
  },
};

function spec(keys?: string[], image = IMAGE): BootcNodeSpec {
  return {
    desiredImage: image,
    desiredImageState: "Staged",
    rebootPolicy: "RebootOnly",
    ...(keys ? { signatureKeys: keys } : {}),
  };
}

async function host(policy?: unknown): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "host-policy-" });
  if (policy !== undefined) {
    await Deno.mkdir(`${root}/etc/containers`, { recursive: true });
    await Deno.writeTextFile(`${root}/${POLICY_FILE}`, JSON.stringify(policy));
  }
  return root;
}

async function read(root: string, path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(`${root}/${path}`);
  } catch {
    return undefined;
  }
}

Deno.test("the scope is the desired image's repository, and only with keys", () => {
  assert.deepEqual(wantedPolicy(spec([PEM])), {
    scope: "registry.example.com/os/node",
    keys: [PEM],
  });
  assert.deepEqual(wantedPolicy(spec()), undefined);
  assert.deepEqual(
    wantedPolicy(spec([PEM], `fedora@sha256:${"b".repeat(64)}`))?.scope,
    "docker.io/library/fedora",
  );
});

Deno.test("enforcing takes over one scope, and letting go puts the user's back", async () => {
  const root = await host(USER_POLICY);
  const installer = new HostPolicyInstaller(root);
  assert.deepEqual((await installer.sync(spec([PEM]))).outcome, "written");
  const written = JSON.parse((await read(root, POLICY_FILE))!);
  assert.deepEqual(written.transports.docker["registry.example.com/os/node"], [{
    type: "sigstoreSigned",
    keyPath: `/${KEY_DIR}/key-0.pub`,
    signedIdentity: { type: "matchRepository" },
  }]);
  // Everything else the user wrote is untouched.
  assert.deepEqual(written.default, USER_POLICY.default);
  assert.deepEqual(
    written.transports.docker["quay.io/other"],
    USER_POLICY.transports.docker["quay.io/other"],
  );
  assert.deepEqual(written.transports["docker-daemon"], USER_POLICY.transports["docker-daemon"]);
  assert.deepEqual(await read(root, `${KEY_DIR}/key-0.pub`), PEM);
  assert.match(
    (await read(root, REGISTRIES_D_FILE))!,
    new RegExp("use-sigstore-attachments: true"),
  );
  assert.deepEqual((await installer.sync(spec([PEM]))).outcome, "unchanged");

  // Two keys: either verifies.
  assert.deepEqual((await installer.sync(spec([PEM, PEM]))).outcome, "written");
  const two = JSON.parse((await read(root, POLICY_FILE))!);
  assert.deepEqual(two.transports.docker["registry.example.com/os/node"][0].keyPaths, [
    `/${KEY_DIR}/key-0.pub`,
    `/${KEY_DIR}/key-1.pub`,
  ]);

  assert.deepEqual((await installer.sync(spec())).outcome, "removed");
  assert.deepEqual(JSON.parse((await read(root, POLICY_FILE))!), USER_POLICY);
  for (
    const path of [REGISTRIES_D_FILE, OWNED_FILE, `${KEY_DIR}/key-0.pub`, `${KEY_DIR}/key-1.pub`]
  ) {
    assert.deepEqual(await read(root, path), undefined, path);
  }
  assert.deepEqual((await installer.sync(spec())).outcome, "unchanged");
});

Deno.test("a new repository moves the scope: the old one is put back first", async () => {
  const root = await host(USER_POLICY);
  const installer = new HostPolicyInstaller(root);
  await installer.sync(spec([PEM]));
  const other = `registry.example.com/os/other@sha256:${"c".repeat(64)}`;
  assert.deepEqual((await installer.sync(spec([PEM], other))).outcome, "written");
  const docker = JSON.parse((await read(root, POLICY_FILE))!).transports.docker;
  assert.deepEqual(docker["registry.example.com/os/node"], [{ type: "reject" }]);
  assert.deepEqual(docker["registry.example.com/os/other"][0].type, "sigstoreSigned");
  assert.match((await read(root, REGISTRIES_D_FILE))!, new RegExp("registry.example.com/os/other"));
});

Deno.test("a host without policy.json gets one that rejects everything else, removed after", async () => {
  const root = await host();
  const installer = new HostPolicyInstaller(root);
  assert.deepEqual((await installer.sync(spec([PEM]))).outcome, "written");
  assert.deepEqual(JSON.parse((await read(root, POLICY_FILE))!).default, [{ type: "reject" }]);
  assert.deepEqual((await installer.sync(spec())).outcome, "removed");
  assert.deepEqual(await read(root, POLICY_FILE), undefined);
});

Deno.test("a policy.json that is not JSON is reported and left alone", async () => {
  const root = await host();
  await Deno.mkdir(`${root}/etc/containers`, { recursive: true });
  await Deno.writeTextFile(`${root}/${POLICY_FILE}`, "{not json");
  const result = await new HostPolicyInstaller(root).sync(spec([PEM]));
  assert.deepEqual(result.outcome, "failed");
  assert.match(result.error!, new RegExp("/etc/containers/policy.json is not valid JSON"));
  assert.deepEqual(await read(root, POLICY_FILE), "{not json");
  assert.deepEqual(await read(root, `${KEY_DIR}/key-0.pub`), undefined);
});
