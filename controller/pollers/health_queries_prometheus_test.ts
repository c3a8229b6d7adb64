/**
 * The Prometheus health check against a real Prometheus (Debian's
 * `/usr/bin/prometheus`, installed by tests/prepare.sh) scraping itself: the
 * answers the service interprets are the server's own, not an emulation.
 */
import assert from "node:assert/strict";
import { HealthQueries } from "./health_queries.ts";
import { startPrometheus } from "../../tests/harness/prometheus.ts";
import { waitFor } from "../../tests/harness/wait.ts";

/** Waits (bounded) until `cond` holds. */
function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<unknown> {
  return waitFor(async () => (await cond()) || undefined, { timeoutMs, message: what });
}

Deno.test("HealthQueries against a real Prometheus: empty, non-empty, matrix, errors", async () => {
  const prom = await startPrometheus();
  const q = new HealthQueries({ intervalMs: 200, timeoutMs: 10_000 });
  try {
    const upOf = { url: prom.url, query: 'up{job="prometheus", instance="$node"}', forSeconds: 0 };
    // Wanted every poll, as the reconciler does; returns the latest verdict.
    const verdictOf = (pool: string, node: string, check: typeof upOf) => q.want(pool, node, check);

    // No such instance: an empty instant vector, i.e. the check can pass.
    await until(() => verdictOf("p", "nowhere:1", upOf)?.last === "empty", "an empty answer");
    assert.ok(q.verdict("p", "nowhere:1")?.emptySince instanceof Date);

    // The real instance: non-empty once Prometheus has scraped itself; the message names it.
    await until(
      () => verdictOf("p", prom.instance, upOf)?.last === "nonEmpty",
      "the self-scrape to show up",
    );
    assert.equal(
      q.verdict("p", prom.instance)?.message,
      `query returned 1 series: up{instance="${prom.instance}",job="prometheus"} = 1`,
    );
    assert.equal(q.verdict("p", prom.instance)?.emptySince, undefined);

    // A range selector gives a matrix: empty for no series, non-empty with samples.
    const range = { ...upOf, query: 'up{instance="$node"}[1m]' };
    await until(() => verdictOf("m", "nowhere:1", range)?.last === "empty", "an empty matrix");
    await until(() => verdictOf("m", prom.instance, range)?.last === "nonEmpty", "a matrix");

    // A series without labels.
    const one = { ...upOf, query: "vector(1)" };
    await until(() => verdictOf("v", "n", one)?.last === "nonEmpty", "vector(1)");
    assert.equal(q.verdict("v", "n")?.message, "query returned 1 series: {} = 1");

    // A syntax error: Prometheus's own message, naming the URL.
    const broken = { ...upOf, query: 'up{instance="$node"' };
    await until(() => verdictOf("e", "n", broken)?.last === "error", "the parse error");
    const message = q.verdict("e", "n")?.message ?? "";
    assert.match(
      message,
      new RegExp(`^Prometheus at ${prom.url}: HTTP 400: bad_data: .*parse error`),
    );

    // A scalar says nothing about series: an error, not "empty".
    const scalar = { ...upOf, query: "scalar(vector(0))" };
    await until(() => verdictOf("s", "n", scalar)?.last === "error", "the scalar error");
    assert.match(q.verdict("s", "n")?.message ?? "", /scalar result, not a vector/);
  } finally {
    await q.close();
    await prom.stop();
  }
});
