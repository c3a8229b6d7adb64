import assert from "node:assert/strict";
import { holdsRebootSlot } from "./annotations.ts";

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
