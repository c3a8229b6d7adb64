import assert from "node:assert/strict";
import type { BootcNodePool } from "../../lib/api/mod.ts";
import {
  channelLine,
  clearRolledBackHint,
  imageName,
  progressLine,
  renderTable,
  TABLE_HEADER,
} from "./view.ts";

const V1 = `sha256:${"1".repeat(64)}`;
const V2 = `sha256:${"2".repeat(64)}`;
const REPO = "127.0.0.1:5000/bootc/os";
const T = "2026-01-01T00:00:00Z";

/** A channel pool on ~1.0 rolling out 1.0.1 while 2.0.0 is outside the range. */
function channelPool(): BootcNodePool {
  return {
    metadata: { name: "workers" },
    spec: {
      nodeSelector: {},
      image: { channel: { repository: REPO, constraint: "~1.0" } },
    },
    status: {
      targetDigest: V2,
      slotsInUse: 1,
      channel: {
        repository: REPO,
        constraint: "~1.0",
        currentVersion: "1.0.1",
        newestVersion: "1.0.1",
        message: "2.0.0 outside ~1.0",
      },
      conditions: [
        {
          type: "UpToDate",
          status: "False",
          reason: "RolloutInProgress",
          message: "3/6 updated; 1 rebooting; channel: 2.0.0 outside ~1.0",
          lastTransitionTime: T,
        },
        {
          type: "Degraded",
          status: "False",
          reason: "Healthy",
          message: "No issues",
          lastTransitionTime: T,
        },
      ],
    },
  } as BootcNodePool;
}

const CHANNEL_NAMES = new Map([[V1, "1.0.0"], [V2, "1.0.1"]]);

Deno.test("imageName: the demo's name, else 12 hex digits", () => {
  assert.equal(imageName(CHANNEL_NAMES, V2), "1.0.1");
  assert.equal(imageName(new Map(), V2), "222222222222");
  assert.equal(imageName(CHANNEL_NAMES, undefined), "-");
});

Deno.test("the channel demo names the channel and the version it runs, the outside note on one line", () => {
  const pool = channelPool();
  assert.equal(channelLine(pool), `channel ~1.0 of ${REPO}: runs 1.0.1; 2.0.0 outside ~1.0`);
  const progress = progressLine(pool, CHANNEL_NAMES, { pool: "workers", elapsedSeconds: 12.34 });
  assert.equal(
    progress,
    "[12.3s] pool workers: target 1.0.1 · RolloutInProgress: 3/6 updated; 1 rebooting · " +
      "slots 1 · healthy",
  );
  assert.doesNotMatch(progress, /outside|v2/, "no 'blocked' look, no tag-demo name");
  const table = renderTable(
    { pool, bootcNodes: [], nodes: [] },
    CHANNEL_NAMES,
    { pool: "workers", elapsedSeconds: 1 },
  );
  assert.deepEqual(table.slice(0, 2), [TABLE_HEADER, channelLine(pool)]);
  // A pool on a tag has no channel line.
  const tagged = { ...pool, spec: { ...pool.spec, image: { ref: `${REPO}:stable` } } };
  delete tagged.status!.channel;
  assert.equal(channelLine(tagged as BootcNodePool), undefined);
});

Deno.test("the headline is the pool's status.state when it has one", () => {
  const pool = channelPool();
  pool.status!.state = "Paused";
  assert.match(
    progressLine(pool, CHANNEL_NAMES, { pool: "workers", elapsedSeconds: 0 }),
    / · Paused: 3\/6 updated/,
  );
});

Deno.test("the end of --bad-image says how RolledBack clears", () => {
  const tag = clearRolledBackHint({ pool: "workers", channel: false, failed: "BAD" }).join("\n");
  assert.match(tag, /push a fixed image to\s+:stable \(a new digest\) or change spec\.image\.ref/);
  assert.match(tag, /kubectl bootc retry workers/);
  const channel = clearRolledBackHint({ pool: "workers", channel: true, failed: "1.0.2" })
    .join("\n");
  assert.match(channel, /publish a fixed version/);
  assert.match(channel, /1\.0\.2 failed and is never chosen again/);
  for (const line of [...tag.split("\n"), ...channel.split("\n")]) {
    assert.ok(line.length <= 100, `fits 100 columns: ${line}`);
  }
});
