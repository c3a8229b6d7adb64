import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import {
  type CanaryInput,
  canarySize,
  type CanaryStatus,
  canaryStep,
  gatePhase,
  soakGraceMs,
  soakStart,
} from "./canary.ts";
import { image, pool } from "../testing/fixtures.ts";

const NOW = new Date("2026-01-01T01:00:00Z");

function canaryPool(
  canary: NonNullable<BootcNodePool["spec"]["rollout"]>["canary"],
  status?: CanaryStatus,
): BootcNodePool {
  const p = pool({ status: status ? { canary: status } : undefined });
  p.spec.rollout = { ...p.spec.rollout, canary };
  return p;
}

Deno.test("canarySize: an integer or a percentage of the pool rounded up, at most the pool", () => {
  const cases: [number | string, number, number][] = [
    [1, 6, 1],
    [2, 6, 2],
    [10, 6, 6],
    ["5%", 6, 1],
    ["50%", 6, 3],
    ["34%", 6, 3],
    ["100%", 6, 6],
    [3, 0, 1],
  ];
  for (const [nodes, members, want] of cases) {
    assert.equal(canarySize(canaryPool({ nodes }), members), want, `${nodes} of ${members}`);
  }
  assert.equal(canarySize(pool(), 6), undefined);
});

Deno.test("canaryStep: Updating → Soaking → Passed, Failed, rollback and a new target", () => {
  const b = image("b");
  const soak = { nodes: 1, soakSeconds: 300 };
  const cases: {
    name: string;
    spec?: { nodes: number | string; soakSeconds?: number };
    prior?: CanaryStatus;
    input?: Partial<CanaryInput>;
    want: CanaryStatus | undefined;
  }[] = [
    { name: "no canary", spec: undefined, want: undefined },
    {
      name: "new target: Updating",
      input: { updated: 0 },
      want: { image: b, phase: "Updating", nodes: 1 },
    },
    {
      name: "the batch updated: soaks until now + soakSeconds",
      prior: { image: b, phase: "Updating", nodes: 1 },
      input: { updated: 1 },
      want: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:05:00Z" },
    },
    {
      name: "the soak ends rounded up to the whole second, never before now + soakSeconds",
      prior: { image: b, phase: "Updating", nodes: 1 },
      input: { updated: 1, now: new Date("2026-01-01T01:00:00.400Z") },
      want: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:05:01Z" },
    },
    {
      name: "soak over while a node is NotReady within its grace: the end moves to the grace's end",
      prior: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:00:00Z" },
      input: { updated: 1, notReadyUntil: new Date("2026-01-01T01:00:07.500Z") },
      want: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:00:08Z" },
    },
    {
      name: "a grace that ended does not hold the soak (the node then fails on its own)",
      prior: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:00:00Z" },
      input: { updated: 1, notReadyUntil: NOW },
      want: { image: b, phase: "Passed", nodes: 1 },
    },
    {
      name: "soaking: the end does not move",
      prior: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:03:00Z" },
      input: { updated: 1 },
      want: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:03:00Z" },
    },
    {
      name: "soak over: Passed",
      prior: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:00:00Z" },
      input: { updated: 1 },
      want: { image: b, phase: "Passed", nodes: 1 },
    },
    {
      name: "no soak: passes as soon as the batch is updated",
      spec: { nodes: 1 },
      prior: { image: b, phase: "Updating", nodes: 1 },
      input: { updated: 1 },
      want: { image: b, phase: "Passed", nodes: 1 },
    },
    {
      name: "a failure while updating",
      prior: { image: b, phase: "Updating", nodes: 1 },
      input: { failed: true },
      want: { image: b, phase: "Failed", nodes: 1 },
    },
    {
      name: "a failure while soaking",
      prior: { image: b, phase: "Soaking", nodes: 1, soakUntil: "2026-01-01T01:03:00Z" },
      input: { updated: 1, failed: true },
      want: { image: b, phase: "Failed", nodes: 1 },
    },
    {
      name: "Failed stays Failed",
      prior: { image: b, phase: "Failed", nodes: 1 },
      input: { updated: 1 },
      want: { image: b, phase: "Failed", nodes: 1 },
    },
    {
      name: "Passed stays Passed (later failures are the failure policy's)",
      prior: { image: b, phase: "Passed", nodes: 1 },
      input: { failed: true },
      want: { image: b, phase: "Passed", nodes: 1 },
    },
    {
      name: "a rollback to a known-good image skips the canary",
      prior: { image: image("z"), phase: "Failed", nodes: 1 },
      input: { rollback: true },
      want: { image: b, phase: "Passed", nodes: 1 },
    },
    {
      name: "a new target starts over whatever the last one did",
      prior: { image: image("z"), phase: "Failed", nodes: 1 },
      input: { updated: 0 },
      want: { image: b, phase: "Updating", nodes: 1 },
    },
    {
      name: "a percentage batch needs all of its nodes",
      spec: { nodes: "50%", soakSeconds: 60 },
      prior: { image: b, phase: "Updating", nodes: 3 },
      input: { updated: 2 },
      want: { image: b, phase: "Updating", nodes: 3 },
    },
  ];
  for (const c of cases) {
    const p = canaryPool("spec" in c ? c.spec : soak, c.prior);
    const got = canaryStep({
      pool: p,
      image: b,
      memberCount: 6,
      updated: 0,
      failed: false,
      rollback: false,
      now: NOW,
      ...c.input,
    });
    assert.deepEqual(got, c.want, c.name);
  }
});

Deno.test("gatePhase: what the canary gate sees", () => {
  assert.equal(gatePhase(undefined), undefined);
  assert.deepEqual(
    gatePhase({ image: image("b"), phase: "Soaking", nodes: 2, soakUntil: "2026-01-01T01:05:00Z" }),
    { phase: "Soaking", nodes: 2, soakUntil: "2026-01-01T01:05:00Z" },
  );
});

Deno.test("soakGraceMs: notReadyGraceSeconds, 0 by default, never longer than the soak", () => {
  assert.equal(soakGraceMs(pool()), 0);
  assert.equal(soakGraceMs(canaryPool({ nodes: 1, soakSeconds: 60 })), 0);
  assert.equal(
    soakGraceMs(canaryPool({ nodes: 1, soakSeconds: 60, notReadyGraceSeconds: 20 })),
    20_000,
  );
  assert.equal(
    soakGraceMs(canaryPool({ nodes: 1, soakSeconds: 20, notReadyGraceSeconds: 60 })),
    20_000,
  );
  assert.equal(soakGraceMs(canaryPool({ nodes: 1, notReadyGraceSeconds: 60 })), 0);
});

Deno.test("soakStart: the soak's end minus soakSeconds, only while soaking", () => {
  const b = image("b");
  const p = canaryPool({ nodes: 1, soakSeconds: 300 });
  const soaking: CanaryStatus = {
    image: b,
    phase: "Soaking",
    nodes: 1,
    soakUntil: "2026-01-01T01:05:00Z",
  };
  assert.equal(soakStart(p, soaking)?.toISOString(), "2026-01-01T01:00:00.000Z");
  assert.equal(soakStart(p, { image: b, phase: "Updating", nodes: 1 }), undefined);
  assert.equal(soakStart(p, undefined), undefined);
});
