import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  FAST_POD_ANNOTATIONS,
  KWOK_MANAGED_ANNOTATION,
  kwokArgs,
  kwokStageFiles,
  NOT_READY_ANNOTATION,
  PROJECT_STAGE_FILES,
} from "./kwok.ts";

Deno.test("kwokStageFiles keeps upstream stage YAMLs (not kustomization) and adds ours", () => {
  const files = kwokStageFiles("/s", [
    "pod-ready.yaml",
    "kustomization.yaml",
    "README.md",
    "node-heartbeat.yaml",
  ]);
  assert.deepEqual(files, ["/s/node-heartbeat.yaml", "/s/pod-ready.yaml", ...PROJECT_STAGE_FILES]);
});

Deno.test("kwokArgs manages only annotated nodes and passes every stage file", () => {
  const args = kwokArgs({ kubeconfigPath: "/k", stageFiles: ["/a.yaml", "/b.yaml"] });
  assert.ok(args.includes("--kubeconfig=/k"));
  assert.ok(args.includes("--manage-all-nodes=false"));
  assert.ok(
    args.includes(`--manage-nodes-with-annotation-selector=${KWOK_MANAGED_ANNOTATION}=fake`),
  );
  assert.deepEqual(args.filter((a) => a.startsWith("--config=")), [
    "--config=/a.yaml",
    "--config=/b.yaml",
  ]);
});

Deno.test("the not-ready stage is selected by our annotation and outweighs kwok's stages", async () => {
  const stage = parse(await Deno.readTextFile(PROJECT_STAGE_FILES[0]));
  assert.equal(stage.kind, "Stage");
  assert.deepEqual(stage.spec.resourceRef, { apiGroup: "v1", kind: "Node" });
  const [expr] = stage.spec.selector.matchExpressions;
  assert.equal(expr.key, `.metadata.annotations["${NOT_READY_ANNOTATION}"]`);
  assert.deepEqual(expr.values, ["true"]);
  // kwok picks among matching stages by weight; its node stages have none (0).
  assert.ok(stage.spec.weight > 0);
  assert.match(stage.spec.next.statusTemplate, /status: "False"/);
});

Deno.test("FAST_POD_ANNOTATIONS bound every pod stage's delay", () => {
  assert.equal(FAST_POD_ANNOTATIONS["pod-create.stage.kwok.x-k8s.io/jitter-delay"], "100ms");
  assert.equal(FAST_POD_ANNOTATIONS["pod-ready.stage.kwok.x-k8s.io/delay"], "0s");
});
