import assert from "node:assert/strict";
import { ANNOTATION_RESET_CIRCUIT, type BootcNodePool } from "../../lib/api/mod.ts";
import { channelWant, plannedChannel } from "./channel_step.ts";
import { pool as basePool } from "../testing/fixtures.ts";

const NOW = new Date("2026-11-23T10:00:00Z");
const TAGS = ["1.0.0", "1.0.1", "2.0.0", "latest"];

function pool(
  channel: Record<string, unknown> | undefined,
  status: Record<string, unknown> = {},
  annotations?: Record<string, string>,
): BootcNodePool {
  const p = basePool({ status: status as never });
  p.spec.image = (channel ? { channel } : { ref: "r/os:1.0.0" }) as typeof p.spec.image;
  if (annotations) p.metadata.annotations = annotations;
  return p;
}

const CHANNEL = { repository: "r/os", constraint: "~1.0" };
const listing = { at: NOW, result: { ok: true as const, tags: TAGS } };

Deno.test("channelWant: none without a channel, with an invalid one, or while deleting", () => {
  assert.equal(channelWant(pool(undefined), NOW), undefined);
  assert.equal(channelWant(pool({ ...CHANNEL, constraint: "~one" }), NOW), undefined);
  const deleting = pool(CHANNEL);
  deleting.metadata.deletionTimestamp = "2026-11-23T09:00:00Z";
  assert.equal(channelWant(deleting, NOW), undefined);
  // Such a pool is planned as it is.
  const plain = pool(undefined);
  assert.deepEqual(plannedChannel({ pool: plain, listing, now: NOW }), { planned: plain });
});

Deno.test("channelWant: a first check is due now; later ones an interval after the last", () => {
  assert.deepEqual(channelWant(pool(CHANNEL), NOW), { repository: "r/os", dueAt: NOW });
  const checked = pool(CHANNEL, {
    channel: { ...CHANNEL, lastCheckTime: "2026-11-23T09:59:00Z" },
  });
  checked.spec.image.pollIntervalSeconds = 300;
  assert.deepEqual(channelWant(checked, NOW), {
    repository: "r/os",
    dueAt: new Date("2026-11-23T10:04:00Z"),
  });
  // Without the pool's interval, the planner's default applies.
  checked.spec.image.pollIntervalSeconds = undefined;
  assert.deepEqual(channelWant(checked, NOW, { defaultPollIntervalMs: 60_000 })?.dueAt, NOW);
});

Deno.test("plannedChannel: the chosen version becomes the ref the planner plans with", () => {
  const { planned, channel } = plannedChannel({ pool: pool(CHANNEL), listing, now: NOW });
  assert.equal(channel?.ref, "r/os:1.0.1");
  assert.equal(planned.spec.image.ref, "r/os:1.0.1");
  // No listing yet and no version: nothing to roll out, the pool as is.
  const waiting = plannedChannel({ pool: pool(CHANNEL), now: NOW });
  assert.equal(waiting.channel?.ref, undefined);
  assert.equal(waiting.planned.spec.image.ref, undefined);
});

const openCircuit = {
  consecutiveFailures: 3,
  channel: { ...CHANNEL, currentVersion: "1.0.0", currentTag: "1.0.0" },
};

Deno.test("plannedChannel: an open circuit holds the version; a reset lets it move", () => {
  const held = plannedChannel({ pool: pool(CHANNEL, openCircuit), listing, now: NOW });
  assert.equal(held.planned.spec.image.ref, "r/os:1.0.0");
  assert.equal(held.channel?.blockedByCircuit, "1.0.1");
  // The reset annotation closes the circuit before this plan.
  const reset = pool(CHANNEL, openCircuit, { [ANNOTATION_RESET_CIRCUIT]: "1" });
  const moved = plannedChannel({ pool: reset, listing, now: NOW });
  assert.equal(moved.planned.spec.image.ref, "r/os:1.0.1");
  assert.equal(moved.channel?.blockedByCircuit, undefined);
});
