import assert from "node:assert/strict";
import { HookPhaseValues } from "../../lib/api/mod.ts";
import { CLOUD_EVENT_TYPES, cloudEvent } from "./cloud_event.ts";

Deno.test("cloudEvent: a structured-mode CloudEvent of a node phase", () => {
  const event = cloudEvent({
    id: "workers/r2/n1/NodePreDrain/2026-03-01T09:00:00Z",
    phase: "NodePreDrain",
    pool: "workers",
    node: "n1",
    revision: 2,
    target: { image: "quay.io/x/os@sha256:bb", digest: "sha256:bb" },
    booted: { image: "quay.io/x/os:1", digest: "sha256:aa" },
    time: "2026-03-01T10:00:00Z",
  });
  assert.deepEqual(event, {
    specversion: "1.0",
    id: "workers/r2/n1/NodePreDrain/2026-03-01T09:00:00Z",
    source: "/apis/node.bootc.dev/v1alpha1/bootcnodepools/workers",
    type: "dev.bootc.node.preDrain",
    subject: "nodes/n1",
    time: "2026-03-01T10:00:00Z",
    datacontenttype: "application/json",
    data: {
      pool: "workers",
      node: "n1",
      phase: "NodePreDrain",
      revision: 2,
      images: {
        target: { image: "quay.io/x/os@sha256:bb", digest: "sha256:bb" },
        booted: { image: "quay.io/x/os:1", digest: "sha256:aa" },
      },
    },
  });
});

Deno.test("cloudEvent: a pool phase has the pool as subject and no node", () => {
  const event = cloudEvent({
    id: "workers/r3/RolloutCompleted",
    phase: "RolloutCompleted",
    pool: "workers",
    revision: 3,
    target: { image: "i", digest: "d" },
    time: "t",
  });
  assert.equal(event.subject, "bootcnodepools/workers");
  assert.equal(event.type, "dev.bootc.pool.rolloutCompleted");
  assert.equal("node" in event.data, false);
});

Deno.test("every phase has a distinct CloudEvents type", () => {
  const types = HookPhaseValues.map((p) => CLOUD_EVENT_TYPES[p]);
  assert.equal(new Set(types).size, HookPhaseValues.length);
  for (const t of types) assert.match(t, /^dev\.bootc\.(node|pool)\.[a-zA-Z]+$/);
});
