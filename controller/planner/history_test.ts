import assert from "node:assert/strict";
import type { Revision } from "../../lib/api/mod.ts";
import { type HistoryInput, lastGoodImage, MAX_HISTORY, nextHistory } from "./history.ts";
import { digest, image } from "../testing/fixtures.ts";
import type { Target } from "../model/types.ts";

const T0 = "2026-01-01T00:00:00Z";
const NOW = new Date("2026-01-01T01:00:00Z");
const NOW_S = "2026-01-01T01:00:00Z";
const t = (seed: string): Target => ({ image: image(seed), digest: digest(seed) });

function rev(n: number, seed: string, outcome: Revision["outcome"], extra: Partial<Revision> = {}) {
  return {
    revision: n,
    image: image(seed),
    digest: digest(seed),
    startedAt: T0,
    outcome,
    ...(outcome === "Progressing" ? {} : { endedAt: T0 }),
    ...extra,
  } as Revision;
}

Deno.test("nextHistory: each transition of the current revision", () => {
  const cases: {
    name: string;
    input: Omit<HistoryInput, "now">;
    want: Revision[];
  }[] = [
    { name: "no target: unchanged", input: { prior: undefined, complete: false }, want: [] },
    {
      name: "first target opens revision 1",
      input: { prior: undefined, target: t("a"), complete: false },
      want: [{
        revision: 1,
        image: image("a"),
        digest: digest("a"),
        startedAt: NOW_S,
        outcome: "Progressing",
      }],
    },
    {
      name: "first target already everywhere: opens and succeeds in one plan",
      input: { prior: [], target: t("a"), complete: true },
      want: [{
        revision: 1,
        image: image("a"),
        digest: digest("a"),
        startedAt: NOW_S,
        endedAt: NOW_S,
        outcome: "Succeeded",
      }],
    },
    {
      name: "same target, not complete: unchanged",
      input: { prior: [rev(1, "a", "Progressing")], target: t("a"), complete: false },
      want: [rev(1, "a", "Progressing")],
    },
    {
      name: "complete: Succeeded",
      input: { prior: [rev(1, "a", "Progressing")], target: t("a"), complete: true },
      want: [rev(1, "a", "Succeeded", { endedAt: NOW_S })],
    },
    {
      name: "already Succeeded stays as it was",
      input: { prior: [rev(1, "a", "Succeeded")], target: t("a"), complete: true },
      want: [rev(1, "a", "Succeeded")],
    },
    {
      name: "a new target supersedes one still in progress",
      input: { prior: [rev(1, "a", "Progressing")], target: t("b"), complete: false },
      want: [
        rev(1, "a", "Superseded", { endedAt: NOW_S }),
        {
          revision: 2,
          image: image("b"),
          digest: digest("b"),
          startedAt: NOW_S,
          outcome: "Progressing",
        },
      ],
    },
    {
      name: "a new target after a success leaves it Succeeded",
      input: { prior: [rev(1, "a", "Succeeded")], target: t("b"), complete: false },
      want: [
        rev(1, "a", "Succeeded"),
        {
          revision: 2,
          image: image("b"),
          digest: digest("b"),
          startedAt: NOW_S,
          outcome: "Progressing",
        },
      ],
    },
    {
      name: "halted failure: Failed with the message",
      input: {
        prior: [rev(1, "a", "Succeeded"), rev(2, "b", "Progressing")],
        target: t("b"),
        complete: false,
        failed: { outcome: "Failed", message: "n1 failed" },
      },
      want: [
        rev(1, "a", "Succeeded"),
        rev(2, "b", "Failed", { endedAt: NOW_S, message: "n1 failed" }),
      ],
    },
    {
      name: "a failure seen again keeps the first end time",
      input: {
        prior: [rev(2, "b", "Failed", { message: "n1 failed" })],
        target: t("b"),
        complete: false,
        failed: { outcome: "Failed", message: "n1 failed again" },
      },
      want: [rev(2, "b", "Failed", { message: "n1 failed" })],
    },
    {
      name: "pool rollback: RolledBack",
      input: {
        prior: [rev(1, "a", "Succeeded"), rev(2, "b", "Progressing")],
        target: t("b"),
        complete: false,
        failed: { outcome: "RolledBack", message: "rolling back" },
      },
      want: [
        rev(1, "a", "Succeeded"),
        rev(2, "b", "RolledBack", { endedAt: NOW_S, message: "rolling back" }),
      ],
    },
    {
      name: "a halted revision escalated to a pool rollback becomes RolledBack",
      input: {
        prior: [rev(2, "b", "Failed", { message: "halted" })],
        target: t("b"),
        complete: false,
        failed: { outcome: "RolledBack", message: "rolling back" },
      },
      want: [rev(2, "b", "RolledBack", { endedAt: NOW_S, message: "rolling back" })],
    },
    {
      name: "RolledBack is final",
      input: {
        prior: [rev(2, "b", "RolledBack", { message: "rolling back" })],
        target: t("b"),
        complete: true,
        failed: { outcome: "Failed", message: "later" },
      },
      want: [rev(2, "b", "RolledBack", { message: "rolling back" })],
    },
    {
      name: "the automatic rollback is a new revision with its note; the failed one stays",
      input: {
        prior: [rev(1, "a", "Succeeded"), rev(2, "b", "RolledBack", { message: "rolling back" })],
        target: t("a"),
        complete: false,
        note: "automatic rollback after b failed",
      },
      want: [
        rev(1, "a", "Succeeded"),
        rev(2, "b", "RolledBack", { message: "rolling back" }),
        {
          revision: 3,
          image: image("a"),
          digest: digest("a"),
          startedAt: NOW_S,
          outcome: "Progressing",
          message: "automatic rollback after b failed",
        },
      ],
    },
    {
      name: "the rollback's note survives its success",
      input: {
        prior: [rev(3, "a", "Progressing", { message: "automatic rollback after b failed" })],
        target: t("a"),
        complete: true,
      },
      want: [
        rev(3, "a", "Succeeded", {
          endedAt: NOW_S,
          message: "automatic rollback after b failed",
        }),
      ],
    },
    {
      name: "a halted revision that completes after all (node recovered): Succeeded, message gone",
      input: {
        prior: [rev(2, "b", "Failed", { message: "n1 failed" })],
        target: t("b"),
        complete: true,
      },
      want: [rev(2, "b", "Succeeded", { endedAt: NOW_S })],
    },
  ];
  for (const c of cases) {
    const prior = structuredClone(c.input.prior);
    assert.deepEqual(nextHistory({ ...c.input, now: NOW }), c.want, c.name);
    assert.deepEqual(c.input.prior, prior, `${c.name}: prior not mutated`);
  }
});

Deno.test("nextHistory: keeps the last 10 revisions and keeps numbering", () => {
  assert.equal(MAX_HISTORY, 10);
  const prior = Array.from(
    { length: 10 },
    (_, i) => rev(i + 5, String.fromCharCode(97 + i), "Succeeded"),
  );
  const next = nextHistory({ prior, target: t("z"), complete: false, now: NOW });
  assert.equal(next.length, 10);
  assert.equal(next[0].revision, 6);
  assert.deepEqual(next.at(-1), {
    revision: 15,
    image: image("z"),
    digest: digest("z"),
    startedAt: NOW_S,
    outcome: "Progressing",
  });
});

Deno.test("lastGoodImage: the newest Succeeded revision other than the target", () => {
  const history = [
    rev(1, "a", "Succeeded"),
    rev(2, "c", "Succeeded"),
    rev(3, "b", "RolledBack"),
    rev(4, "d", "Failed"),
    rev(5, "e", "Superseded"),
    rev(6, "f", "Progressing"),
  ];
  const cases: [string, Revision[] | undefined, string | undefined, string | undefined][] = [
    ["newest success", history, image("f"), image("c")],
    ["the target itself is skipped", history, image("c"), image("a")],
    ["no except", history, undefined, image("c")],
    ["no success", [rev(1, "b", "RolledBack")], image("b"), undefined],
    ["no history", undefined, image("b"), undefined],
  ];
  for (const [name, h, except, want] of cases) {
    assert.equal(lastGoodImage(h, except)?.image, want, name);
  }
});
