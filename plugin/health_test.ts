import assert from "node:assert/strict";
import { ExitCode } from "./errors.ts";
import { poolHeadline, statusExitCode } from "./health.ts";
import { cond, pool } from "./testing.ts";

Deno.test("headline from the conditions (a controller that publishes no status.state)", () => {
  const cases: [string, ReturnType<typeof pool>, string, string][] = [
    [
      "all updated",
      pool({ upToDate: cond("UpToDate", "True", "AllUpdated") }),
      "AllUpdated",
      "healthy",
    ],
    ["progressing", pool(), "RolloutInProgress", "progressing"],
    ["a gate", pool({ upToDate: cond("UpToDate", "False", "Blackout") }), "Blackout", "held"],
    ["paused", pool({ paused: true }), "RolloutInProgress", "held"],
    [
      "typo'd tag, nodes all updated",
      pool({
        upToDate: cond("UpToDate", "True", "AllUpdated"),
        degraded: cond("Degraded", "True", "ImageResolutionFailed"),
      }),
      "ImageResolutionFailed",
      "unhealthy",
    ],
    [
      "halted",
      pool({ degraded: cond("Degraded", "True", "RolloutHalted") }),
      "RolloutHalted",
      "unhealthy",
    ],
    [
      "rolled back",
      pool({ degraded: cond("Degraded", "True", "RolledBack") }),
      "RolledBack",
      "unhealthy",
    ],
  ];
  for (const [name, p, state, health] of cases) {
    assert.deepEqual(poolHeadline(p), { state, health }, name);
  }
  const open = pool({ upToDate: cond("UpToDate", "True", "AllUpdated") });
  open.status!.conditions!.push(cond("CircuitOpen", "True", "TooManyFailedRollouts"));
  assert.deepEqual(poolHeadline(open), { state: "CircuitOpen", health: "unhealthy" });
});

Deno.test("headline from status.state, by its kind in the shared table", () => {
  const cases: [string, string][] = [
    ["InvalidSpec", "unhealthy"],
    ["Halted", "unhealthy"],
    ["ImageFailedBefore", "unhealthy"],
    ["CircuitOpen", "unhealthy"],
    ["Paused", "held"],
    ["StagingLimit", "held"],
    ["Staging", "progressing"],
    ["RollingOut", "progressing"],
    ["AllUpdated", "healthy"],
  ];
  for (const [state, health] of cases) {
    const p = pool();
    (p.status as { state?: string }).state = state;
    assert.deepEqual(poolHeadline(p), { state, health }, state);
  }
  // A Degraded condition is a problem whatever the state says (never green over red).
  const p = pool({ degraded: cond("Degraded", "True", "NodeDegraded") });
  (p.status as { state?: string }).state = "RollingOut";
  assert.equal(poolHeadline(p).health, "unhealthy");
});

Deno.test("status exit codes: the worst pool wins; --strict fails a rollout still running", () => {
  assert.equal(statusExitCode([]), ExitCode.Ok);
  assert.equal(statusExitCode(["healthy", "progressing", "held"]), 0);
  assert.equal(statusExitCode(["healthy", "unhealthy", "progressing"]), 1);
  assert.equal(statusExitCode(["healthy", "held"], true), 4);
  assert.equal(statusExitCode(["progressing", "unhealthy"], true), 1);
  assert.equal(statusExitCode(["healthy"], true), 0);
  assert.deepEqual(
    [ExitCode.Unhealthy, ExitCode.NotFound, ExitCode.Usage, ExitCode.Failed, ExitCode.NotDone],
    [1, 2, 2, 3, 4],
  );
});
