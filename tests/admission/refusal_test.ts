/**
 * Refusal at admission, as docs/policy.md and the gates README promise: every value
 * of the table in `cases.ts` (cron schedules, nicknames, durations, time zones,
 * blackout instants, in each place a pool holds them) is applied to a real
 * kube-apiserver with the generated CRDs. Bad values are refused at apply time
 * with the field named and what is accepted; good values are accepted. The
 * controller's check runs the same table (`controller/gates/schedule_agreement_test.ts`).
 *
 * One API server, no controller: CEL in the CRD needs nothing else. Creates are
 * server-side dry runs (`?dryRun=All`): full admission, nothing stored.
 */
import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { isInvalid, Resources } from "../../lib/kube/mod.ts";
import { startCrdApiServer } from "../harness/crd_api_server.ts";
import {
  APPROVAL_CASES,
  DRAIN_CASES,
  type DrainCase,
  fieldOf,
  poolSpecWith,
  poolSpecWithDrain,
  STRATEGY_CASES,
  TIME_CASES,
  type TimeCase,
} from "./cases.ts";

function pool(name: string, spec: Record<string, unknown>): BootcNodePool {
  return {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    metadata: { name },
    spec,
  } as unknown as BootcNodePool;
}

/** What is wrong with the API server's answer to `c`, or undefined when it is the table's. */
function verdictProblem(c: TimeCase, error: unknown): string | undefined {
  const want = c.refused;
  if (want === undefined) return error === undefined ? undefined : `refused: ${error}`;
  if (error === undefined) return "accepted";
  if (!isInvalid(error)) return `not Invalid: ${error}`;
  const field = fieldOf(c.at);
  const causes = error.details?.causes ?? [];
  const cause = causes.find((x) => x.field === field);
  if (!cause) return `no cause on ${field}: ${JSON.stringify(causes)}`;
  if (causes.length !== 1) return `more than one cause: ${JSON.stringify(causes)}`;
  // What `kubectl apply` prints: the field, the value (or, when CEL fails on an unknown zone,
  // "unknown time zone <value>"), then the rule's message saying what is accepted.
  if (!error.message.includes(`${field}: Invalid value: `)) return `message: ${error.message}`;
  if (!error.message.includes(c.value)) return `value not shown: ${error.message}`;
  if (!want.test(cause.message ?? "")) return `message ${cause.message} does not match ${want}`;
  return undefined;
}

/** What is wrong with the API server's answer to drain case `c`, or undefined. */
function drainVerdictProblem(c: DrainCase, error: unknown): string | undefined {
  if (!c.refused) return error === undefined ? undefined : `refused: ${error}`;
  if (error === undefined) return "accepted";
  if (!isInvalid(error)) return `not Invalid: ${error}`;
  const causes = error.details?.causes ?? [];
  const cause = causes.find((x) => x.field === c.refused!.field);
  if (!cause) return `no cause on ${c.refused.field}: ${JSON.stringify(causes)}`;
  if (!c.refused.message.test(cause.message ?? "")) {
    return `message ${cause.message} does not match ${c.refused.message}`;
  }
  return undefined;
}

Deno.test("admission: bad time values are refused at apply time, naming the field", async (t) => {
  const cp = await startCrdApiServer();
  try {
    const pools = cp.client.resource<BootcNodePool>(Resources.bootcNodePools);

    await t.step(`the table: ${TIME_CASES.length} values in every place they appear`, async () => {
      const problems: string[] = [];
      for (const [i, c] of TIME_CASES.entries()) {
        const error = await pools.create(pool(`case-${i}`, poolSpecWith(c.at, c.value)), {
          dryRun: true,
        }).then(() => undefined, (e) => e);
        const problem = verdictProblem(c, error);
        if (problem) problems.push(`${c.at} = ${JSON.stringify(c.value)}: ${problem}`);
      }
      assert.deepEqual(problems, []);
    });

    await t.step(`the drain policy: ${DRAIN_CASES.length} cases`, async () => {
      const problems: string[] = [];
      for (const [i, c] of DRAIN_CASES.entries()) {
        const error = await pools.create(pool(`drain-${i}`, poolSpecWithDrain(c.drain)), {
          dryRun: true,
        }).then(() => undefined, (e) => e);
        const problem = drainVerdictProblem(c, error);
        if (problem) problems.push(`${JSON.stringify(c.drain)}: ${problem}`);
      }
      assert.deepEqual(problems, []);
    });

    await t.step(`the approval gate: ${APPROVAL_CASES.length} cases`, async () => {
      const problems: string[] = [];
      for (const [i, c] of APPROVAL_CASES.entries()) {
        const spec = { ...poolSpecWithDrain({}), rollout: { approval: c.approval } };
        const error = await pools.create(pool(`approval-${i}`, spec), { dryRun: true })
          .then(() => undefined, (e) => e);
        const problem = drainVerdictProblem({ drain: c.approval, refused: c.refused }, error);
        if (problem) problems.push(`${JSON.stringify(c.approval)}: ${problem}`);
      }
      assert.deepEqual(problems, []);
    });

    await t.step("spec.rollout.strategy: RollingUpdate or External, else refused", async () => {
      const problems: string[] = [];
      for (const [i, c] of STRATEGY_CASES.entries()) {
        const spec = { ...poolSpecWith("timeZone", "UTC"), rollout: { strategy: c.value } };
        const error = await pools.create(pool(`strategy-${i}`, spec), { dryRun: true })
          .then(() => undefined, (e) => e);
        const label = JSON.stringify(c.value);
        if (!c.refused) {
          if (error !== undefined) problems.push(`${label} refused: ${error}`);
        } else if (error === undefined || !isInvalid(error)) {
          problems.push(`${label}: ${error ?? "accepted"}`);
        } else if (
          !error.message.includes("spec.rollout.strategy: Unsupported value") ||
          !c.refused.test(error.message)
        ) problems.push(`${label}: ${error.message}`);
      }
      assert.deepEqual(problems, []);
    });

    await t.step("a blackout that ends before it starts is refused on the blackout", async () => {
      const spec = poolSpecWith("blackout.start", "2027-01-03T00:00:00Z");
      (spec.maintenance as { blackouts: { end: string }[] }).blackouts[0].end =
        "2026-12-20T00:00:00Z";
      const error = await pools.create(pool("order", spec), { dryRun: true })
        .then(() => undefined, (e) => e);
      assert.ok(isInvalid(error), `expected Invalid, got ${error}`);
      assert.match(
        error.message,
        /spec\.maintenance\.blackouts\[0\]: Invalid value: .*end must be after start/,
      );
    });

    await t.step("kubectl apply names every bad field of one pool at once", async () => {
      const spec = {
        ...poolSpecWith("timeZone", "Mars/Olympus"),
        maintenance: { windows: [{ schedule: "0 25 * * *", duration: "100000h" }] },
      };
      const res = await cp.kubectl(["apply", "--dry-run=server", "-f", "-"], {
        stdin: JSON.stringify(pool("kubectl", spec)),
      });
      assert.notEqual(res.code, 0, res.stdout);
      const out = res.stderr;
      assert.match(out, /spec\.timeZone: Invalid value: .*unknown time zone Mars\/Olympus/);
      assert.match(
        out,
        /spec\.maintenance\.windows\[0\]\.schedule: Invalid value: "0 25 \* \* \*": must be a valid cron schedule: the hour \(field 2\) takes 0-23/,
      );
      assert.match(
        out,
        /spec\.maintenance\.windows\[0\]\.duration: Invalid value: "100000h": .*from 1s to 87600h/,
      );
    });
  } finally {
    await cp.stop();
  }
});
