import assert from "node:assert/strict";
import { allocateCells, legend, progressBar } from "./bar.ts";
import { emptyBucketCounts } from "./progress.ts";
import { createStyle, stripAnsi, visibleLength } from "./style.ts";

const counts = (c: Partial<ReturnType<typeof emptyBucketCounts>>) => ({
  ...emptyBucketCounts(),
  ...c,
});
const plain = createStyle(false);
const color = createStyle(true);

Deno.test("cells are proportional and always fill the width", () => {
  assert.deepEqual(allocateCells(counts({ updated: 2, rebooting: 1, staged: 1 }), 20), {
    ...emptyBucketCounts(),
    updated: 10,
    rebooting: 5,
    staged: 5,
  });
  for (const width of [1, 7, 13, 40]) {
    const cells = allocateCells(counts({ updated: 3, staging: 2, pending: 2 }), width);
    assert.equal(Object.values(cells).reduce((a, b) => a + b, 0), width, `width ${width}`);
  }
  assert.deepEqual(allocateCells(emptyBucketCounts(), 10), emptyBucketCounts());
});

Deno.test("one failed node among many still gets a cell", () => {
  const cells = allocateCells(counts({ updated: 999, failed: 1 }), 30);
  assert.equal(cells.failed, 1);
  assert.equal(cells.updated, 29);
});

Deno.test("the bar reads without colour: one glyph per bucket, in order", () => {
  assert.equal(
    progressBar(
      counts({ updated: 1, rebooting: 1, staged: 1, staging: 1, pending: 1, failed: 1 }),
      12,
      plain,
    ),
    "██▓▓▒▒░░··✗✗",
  );
  assert.equal(progressBar(counts({ updated: 5 }), 10, plain), "██████████");
  assert.equal(progressBar(emptyBucketCounts(), 4, plain), "    ");
});

Deno.test("with colour the same glyphs are wrapped in colours; widths are unchanged", () => {
  const bar = progressBar(counts({ updated: 1, failed: 1 }), 10, color);
  assert.equal(stripAnsi(bar), "█████✗✗✗✗✗");
  assert.equal(visibleLength(bar), 10);
  assert.ok(bar.includes("\x1b[32m█████\x1b[39m"), "updated is green");
  assert.ok(bar.includes("\x1b[31m✗✗✗✗✗\x1b[39m"), "failed is red");
});

Deno.test("the legend carries the counts", () => {
  assert.equal(
    legend(counts({ updated: 3, rebooting: 1 }), plain),
    "█ 3 updated  ▓ 1 rebooting  ▒ 0 staged  ░ 0 staging  · 0 pending  ✗ 0 failed",
  );
  assert.ok(legend(counts({ failed: 2 }), color).includes("\x1b[31m✗ 2 failed\x1b[39m"));
  // Compact (a narrow terminal): the empty buckets are left out, the failed one stays.
  assert.equal(
    legend(counts({ updated: 3, failed: 1 }), plain, true),
    "█ 3 updated  ✗ 1 failed",
  );
});
