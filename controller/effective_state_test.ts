import assert from "node:assert/strict";
import { EffectiveState, effectiveState, entryMatches } from "./effective_state.ts";
import { bootcNode, digest, image, type Phase, REPO } from "./testing/fixtures.ts";

const cases: { name: string; phase: Phase; booted?: string; want: EffectiveState }[] = [
  {
    name: "degraded wins over up to date",
    phase: "degraded",
    booted: image("b"),
    want: "Degraded",
  },
  { name: "booted desired", phase: "idle", booted: image("b"), want: "UpToDate" },
  { name: "no status yet", phase: "pending", want: "Pending" },
  { name: "idle but not on desired (daemon has not reacted)", phase: "idle", want: "Pending" },
  { name: "staging", phase: "staging", want: "Staging" },
  { name: "staged", phase: "staged", want: "Staged" },
  { name: "rebooting", phase: "rebooting", want: "Rebooting" },
  { name: "degraded while staging", phase: "degraded", want: "Degraded" },
];

for (const c of cases) {
  Deno.test(`effectiveState: ${c.name}`, () => {
    const bn = bootcNode("n1", { phase: c.phase, booted: c.booted ?? image("a") });
    assert.equal(effectiveState(bn, { image: bn.spec.desiredImage }), c.want);
  });
}

Deno.test("effectiveState: Staged with another image staged counts as Pending", () => {
  const bn = bootcNode("n1", { phase: "staged", desired: image("c") });
  bn.spec.desiredImage = image("d");
  assert.equal(effectiveState(bn, { image: image("d") }), EffectiveState.Pending);
});

Deno.test("entryMatches: pullspec digest, imageDigest or per-arch index digest", () => {
  const index = digest("1");
  const armManifest = digest("2");
  const amdManifest = digest("3");
  const desired = {
    image: `${REPO}@${index}`,
    platforms: [
      { os: "linux", architecture: "arm64", digest: armManifest },
      { os: "linux", architecture: "amd64", digest: amdManifest },
    ],
  };
  // bootc keeps the pullspec it was given: the index digest.
  assert.ok(entryMatches({ image: `${REPO}@${index}`, imageDigest: amdManifest }, desired));
  // Booted by some other pullspec (e.g. a tag) but the per-arch manifest is the target's.
  assert.ok(
    entryMatches({ image: `${REPO}:v2`, imageDigest: armManifest, architecture: "arm64" }, desired),
  );
  // The arm64 manifest on an amd64 host is not a match.
  assert.ok(
    !entryMatches(
      { image: `${REPO}:v2`, imageDigest: armManifest, architecture: "amd64" },
      desired,
    ),
  );
  assert.ok(!entryMatches({ image: `${REPO}:v1`, imageDigest: digest("9") }, desired));
  assert.ok(!entryMatches(undefined, desired));
});
