import assert from "node:assert/strict";
import { DIGEST_PINNED_PATTERN, IMAGE_REFERENCE_PATTERN } from "./schema.ts";
import { bootcNodeCrd, bootcNodePoolCrd } from "./crd.ts";

const digest = "sha256:" + "a".repeat(64);
const imageRe = new RegExp(IMAGE_REFERENCE_PATTERN);

Deno.test("image reference pattern accepts the forms users write", () => {
  for (
    const ref of [
      "quay.io/example/myos:latest",
      "quay.io/example/myos",
      `quay.io/example/myos@${digest}`,
      `quay.io/example/myos:v2@${digest}`,
      "localhost:5000/os:1.0",
      "127.0.0.1:5000/a/b/c:tag_1.2-x",
      "fedora",
      "docker.io/library/fedora:40",
      "[::1]:5000/os:v1",
    ]
  ) assert.ok(imageRe.test(ref), ref);
});

Deno.test("image reference pattern rejects malformed references", () => {
  for (
    const ref of [
      "",
      "Quay.io/Example/MyOS:latest",
      "quay.io/example/myos:",
      "quay.io/example/myos@sha256:abc",
      "quay.io/example/my os:1",
      "quay.io//os:1",
      "quay.io/os:" + "x".repeat(129),
      "https://quay.io/os:1",
    ]
  ) assert.ok(!imageRe.test(ref), ref);
});

Deno.test("desiredImage must be digest-pinned", () => {
  const pinned = new RegExp(DIGEST_PINNED_PATTERN);
  assert.ok(pinned.test(`quay.io/os@${digest}`));
  assert.ok(!pinned.test("quay.io/os:latest"));
  assert.ok(!pinned.test(`quay.io/os@${digest}x`));
});

function versionSchema(crd: Record<string, unknown>) {
  // deno-lint-ignore no-explicit-any
  return (crd.spec as any).versions[0];
}

Deno.test("CRDs are cluster-scoped with a status subresource, short names and columns", () => {
  for (const crd of [bootcNodePoolCrd(), bootcNodeCrd()]) {
    // deno-lint-ignore no-explicit-any
    const spec = crd.spec as any;
    assert.equal(spec.scope, "Cluster");
    assert.equal(spec.group, "node.bootc.dev");
    assert.ok(spec.names.shortNames.length > 0);
    const version = versionSchema(crd);
    assert.deepEqual(version.subresources, { status: {} });
    assert.ok(
      version.additionalPrinterColumns.some((c: { priority?: number }) => c.priority === 1),
    );
  }
});

Deno.test("pool schema defaults and requires what the design says", () => {
  const schema = versionSchema(bootcNodePoolCrd()).schema.openAPIV3Schema;
  const spec = schema.properties.spec;
  assert.deepEqual(spec.required, ["nodeSelector", "image"]);
  const rollout = spec.properties.rollout.properties;
  assert.equal(rollout.maxUnavailable.default, 1);
  assert.equal(rollout.maxUnavailable["x-kubernetes-int-or-string"], true);
  assert.equal(rollout.paused.default, false);
  assert.equal(spec.properties.disruption.properties.rebootPolicy.default, "RebootOnly");
  assert.deepEqual(spec.properties.disruption.properties.rebootPolicy.enum, [
    "RebootOnly",
    "AllowSoftReboot",
  ]);
  // A fixed ref or a channel, exactly one (CEL), so neither is required on its own.
  assert.equal(spec.properties.image.required, undefined);
  assert.deepEqual(
    spec.properties.image["x-kubernetes-validations"].map((v: { rule: string }) => v.rule),
    ["has(self.ref) != has(self.channel)"],
  );
  for (
    const [field, value] of [
      ["stagingTimeoutSeconds", 1800],
      ["daemonReportTimeoutSeconds", 300],
    ] as const
  ) {
    assert.equal(rollout[field].type, "integer", field);
    assert.equal(rollout[field].default, value, field);
    assert.equal(rollout[field].minimum, 1, field);
    assert.ok(rollout[field].description.includes("Stalled"), field);
  }
  assert.match(
    spec.properties.pullSecretRef.description,
    /kubernetes\.io\/dockerconfigjson in the operator's namespace \(the only namespace the daemons can read\)/,
  );
  // No TypeBox-only keywords leak into the structural schema.
  const text = JSON.stringify(schema);
  assert.ok(
    !text.includes('"anyOf"') && !text.includes('"const"') &&
      !text.includes('"patternProperties"'),
  );
});

Deno.test("node schema: desiredImageState enum defaulting to Staged", () => {
  const spec = versionSchema(bootcNodeCrd()).schema.openAPIV3Schema.properties.spec;
  assert.deepEqual(spec.required, ["desiredImage"]);
  assert.deepEqual(spec.properties.desiredImageState.enum, ["Staged", "Booted"]);
  assert.equal(spec.properties.desiredImageState.default, "Staged");
});

Deno.test("pool schema: the name and the selector carry the admission rules", () => {
  const schema = versionSchema(bootcNodePoolCrd()).schema.openAPIV3Schema;
  const [nameRule] = schema["x-kubernetes-validations"];
  assert.equal(nameRule.rule, "size(self.metadata.name) <= 63");
  assert.equal(nameRule.fieldPath, ".metadata.name");
  assert.match(nameRule.message, /bootc\.dev\/pool label/);
  const selector = schema.properties.spec.properties.nodeSelector.properties;
  assert.equal(selector.matchLabels["x-kubernetes-validations"].length, 1);
  assert.equal(selector.matchLabels.additionalProperties.maxLength, 63);
  const requirement = selector.matchExpressions.items;
  assert.equal(requirement["x-kubernetes-validations"].length, 2);
  assert.equal(requirement.properties.key["x-kubernetes-validations"].length, 1);
  assert.equal(requirement.properties.values.items.maxLength, 63);
});

Deno.test("every CEL rule's input is bounded, so the API server can estimate its cost", () => {
  // Arrays need maxItems, maps maxProperties and strings maxLength wherever a rule sits at
  // or below them; without these the API server refuses the CRD (tested for real in
  // crd_integration_test.ts). The root rule is the exception: it only takes size().
  const unbounded: string[] = [];
  const walk = (node: Record<string, unknown>, path: string): boolean => {
    let hasRule = Array.isArray(node["x-kubernetes-validations"]) && path !== "";
    const props = (node.properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const [name, child] of Object.entries(props)) {
      if (walk(child, `${path}.${name}`)) hasRule = true;
    }
    for (const key of ["items", "additionalProperties"] as const) {
      const child = node[key] as Record<string, unknown> | undefined;
      if (child && walk(child, `${path}[]`)) {
        hasRule = true;
        const bound = key === "items" ? "maxItems" : "maxProperties";
        if (!(bound in node)) unbounded.push(`${path} (${bound})`);
      }
    }
    if (hasRule && node.type === "string" && !("maxLength" in node) && !("enum" in node)) {
      unbounded.push(`${path} (maxLength)`);
    }
    return hasRule;
  };
  for (const crd of [bootcNodePoolCrd(), bootcNodeCrd()]) {
    walk(versionSchema(crd).schema.openAPIV3Schema, "");
  }
  assert.deepEqual(unbounded, []);
});

Deno.test("pool schema: the drain policy's defaults and its podSelector rule", () => {
  const spec = versionSchema(bootcNodePoolCrd()).schema.openAPIV3Schema.properties.spec;
  const drain = spec.properties.rollout.properties.drain.properties;
  assert.equal(drain.onTimeout.default, "Degrade");
  assert.deepEqual(drain.onTimeout.enum, ["Degrade", "Force"]);
  assert.equal(drain.deleteEmptyDirData.default, false);
  assert.equal(drain.gracePeriodSeconds.minimum, 1);
  assert.equal(drain.skipWaitForDeleteTimeoutSeconds.minimum, 1);
  // The meaning is the opposite of kubectl drain's --pod-selector: said where people read it.
  assert.match(
    drain.podSelector.description,
    /LEAVE ALONE.*opposite of `kubectl drain --pod-selector`/s,
  );
  assert.match(drain.podSelector["x-kubernetes-validations"][0].message, /empty selector/);
});
