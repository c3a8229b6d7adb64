import assert from "node:assert/strict";
import { capabilitiesFromVersion, compareVersions, parseBootcVersion } from "./version.ts";

Deno.test("parseBootcVersion reads `bootc --version` output", () => {
  assert.deepEqual(parseBootcVersion("bootc 1.16.10\n"), { major: 1, minor: 16, patch: 10 });
  assert.deepEqual(parseBootcVersion("bootc 1.12"), { major: 1, minor: 12, patch: 0 });
  assert.equal(parseBootcVersion("bootc (unknown)"), undefined);
  assert.ok(
    compareVersions({ major: 1, minor: 16, patch: 9 }, { major: 1, minor: 16, patch: 10 }) < 0,
  );
});

Deno.test("capabilitiesFromVersion picks the staging strategy by version", () => {
  const cases: [string, string | undefined, string | undefined, boolean][] = [
    ["bootc 1.16.10", "switch-download-only", "switch", false],
    ["bootc 1.17.0", "switch-download-only", "switch", false],
    ["bootc 2.0.0", "switch-download-only", "switch", false],
    ["bootc 1.16.9", "switch-then-upgrade-download-only", "upgrade", false],
    ["bootc 1.12.0", "switch-then-upgrade-download-only", "upgrade", false],
    ["bootc 1.11.2", undefined, undefined, true],
    ["bootc 1.1.4", undefined, undefined, true],
    ["garbage", undefined, undefined, true],
  ];
  for (const [text, stage, apply, problem] of cases) {
    const caps = capabilitiesFromVersion(text);
    assert.equal(caps.stage, stage, text);
    assert.equal(caps.apply, apply, text);
    assert.equal(caps.problem !== undefined, problem, text);
  }
  assert.match(capabilitiesFromVersion("bootc 1.11.2").problem!, /^bootc too old: 1\.11\.2/);
  assert.equal(capabilitiesFromVersion("bootc 1.16.10").version, "1.16.10");
});
