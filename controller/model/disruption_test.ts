import assert from "node:assert/strict";
import { ANNOTATION_IN_REBOOT_SLOT, ANNOTATION_WAS_CORDONED } from "../../lib/api/mod.ts";
import { releaseCordonNote, repairPatch } from "./disruption.ts";
import { type Plan, planPool } from "../planner/planner.ts";
import { parseTime } from "./slots.ts";
import { bootcNode, input, node, pod, pool } from "../testing/fixtures.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const record = (slot: string, extra: Record<string, string> = {}) => ({
  [ANNOTATION_IN_REBOOT_SLOT]: slot,
  "bootc.dev/reboot-slot-pool": "workers",
  "bootc.dev/was-cordoned": "false",
  ...extra,
});

Deno.test("parseTime: RFC 3339 only", () => {
  assert.deepEqual(parseTime("2026-01-01T00:59:00Z"), new Date("2026-01-01T00:59:00Z"));
  assert.deepEqual(parseTime("2026-01-01T01:59:00.5+01:00"), new Date("2026-01-01T00:59:00.5Z"));
  for (const bad of ["garbage", "7", "March 7, 2026", "2026-01-01", "2026-13-45T99:99:99Z"]) {
    assert.equal(parseTime(bad), undefined, bad);
  }
});

Deno.test("repairPatch: an unreadable slot time is replaced by now, reported", () => {
  const n = node("n1", { unschedulable: true, annotations: record("yesterday-ish") });
  const repair = repairPatch(n, undefined, "workers", NOW);
  assert.deepEqual(repair.patch, {
    metadata: { annotations: { [ANNOTATION_IN_REBOOT_SLOT]: "2026-01-01T01:00:00Z" } },
  });
  assert.match(repair.fixed.join(), /unreadable bootc\.dev\/in-reboot-slot.*"yesterday-ish"/);
});

Deno.test("repairPatch: an unreadable slot time takes the finished drain's time when readable", () => {
  const n = node("n1", {
    unschedulable: true,
    annotations: record("x", { "bootc.dev/drained-at": "2026-01-01T00:30:00Z" }),
  });
  assert.equal(repairPatch(n, undefined, "workers", NOW).record.slotAt, "2026-01-01T00:30:00Z");
  // A readable slot time is left alone.
  const ok = node("n1", { unschedulable: true, annotations: record("2026-01-01T00:10:00Z") });
  assert.equal(repairPatch(ok, undefined, "workers", NOW).patch, undefined);
});

Deno.test("garbled slot annotation: repaired with an event, then the drain timeout fires", () => {
  const bn = bootcNode("n1", { phase: "staged" });
  bn.metadata.annotations = { "bootc.dev/was-cordoned": "false" };
  const at = (slot: string, now: string): Plan =>
    planPool(input(pool({ drainTimeoutSeconds: 60 }), {
      nodes: [node("n1", { unschedulable: true, annotations: record(slot) })],
      bootcNodes: [bn],
      pods: [pod("web", "n1")],
      now,
    }));
  const plan = at("not-a-time", "2026-01-01T01:00:00Z");
  const repair = plan.actions.find((a) => a.kind === "patchNode" && a.why === "repair record");
  const patch = repair?.kind === "patchNode" ? repair.patch : {};
  const annotations = (patch.metadata as { annotations: Record<string, string> }).annotations;
  assert.equal(annotations?.[ANNOTATION_IN_REBOOT_SLOT], "2026-01-01T01:00:00Z");
  assert.ok(plan.events.some((e) => e.reason === "DisruptionRecordRepaired"));
  const later = at(annotations[ANNOTATION_IN_REBOOT_SLOT], "2026-01-01T01:01:01Z");
  assert.ok(later.events.some((e) => e.reason === "DrainBlocked" && /within 60s/.test(e.message)));
});

Deno.test("releaseCordonNote says how the release leaves the cordon (the NodeUpdated event)", () => {
  const cordoned = (was?: string) =>
    node("n1", {
      unschedulable: true,
      annotations: was === undefined ? {} : { [ANNOTATION_WAS_CORDONED]: was },
    });
  assert.equal(releaseCordonNote(node("n1"), undefined), "");
  assert.equal(releaseCordonNote(cordoned("false"), undefined), ", uncordoned");
  assert.match(releaseCordonNote(cordoned("true"), undefined), /^, left cordoned \(it was/);
  assert.match(releaseCordonNote(cordoned(), undefined), /prior cordon state was lost/);
});
