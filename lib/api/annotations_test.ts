import assert from "node:assert/strict";
import { drainedFor, holdsRebootSlot, rebootRecorded } from "./annotations.ts";

Deno.test("holdsRebootSlot reads the slot annotation", () => {
  assert.equal(holdsRebootSlot({ metadata: {} }), false);
  assert.equal(holdsRebootSlot({ metadata: { annotations: { other: "x" } } }), false);
  assert.equal(
    holdsRebootSlot({
      metadata: { annotations: { "bootc.dev/in-reboot-slot": "2026-01-01T00:00:00Z" } },
    }),
    true,
  );
});

Deno.test("drainedFor: a finished drain for exactly the image", () => {
  const at = "2026-01-01T00:00:00Z";
  assert.equal(drainedFor({ drainedAt: at, drainedFor: "r@sha256:a" }, "r@sha256:a"), true);
  assert.equal(drainedFor({ drainedAt: at, drainedFor: "r@sha256:a" }, "r@sha256:b"), false);
  // The image without the time is a damaged record, no finished drain.
  assert.equal(drainedFor({ drainedFor: "r@sha256:a" }, "r@sha256:a"), false);
  assert.equal(drainedFor({ drainedAt: at }, undefined), false);
});

Deno.test("rebootRecorded: Booted, a slot and a drain for the desired image", () => {
  const record = { slotAt: "2026-01-01T00:00:00Z", drainedAt: "2026-01-01T00:01:00Z" };
  const bn = (state: string) => ({
    spec: { desiredImage: "r@sha256:a", desiredImageState: state },
  });
  assert.equal(rebootRecorded({ ...record, drainedFor: "r@sha256:a" }, bn("Booted")), true);
  assert.equal(rebootRecorded({ ...record, drainedFor: "r@sha256:a" }, bn("Staged")), false);
  assert.equal(rebootRecorded({ ...record, drainedFor: "r@sha256:b" }, bn("Booted")), false);
  assert.equal(
    rebootRecorded({ drainedAt: record.drainedAt, drainedFor: "r@sha256:a" }, bn("Booted")),
    false,
  );
});
