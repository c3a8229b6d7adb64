import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import {
  formatSeries,
  HealthQueries,
  type HealthQueriesOptions,
  interpretResponse,
  nextVerdict,
  queryUrl,
} from "./health_queries.ts";

const INTERVAL = 5_000;
const TIMEOUT = 3_000;

/** Waits (in real time, bounded) until `cond` holds. */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function vector(series: { metric: Record<string, string>; value: string }[]) {
  return Response.json({
    status: "success",
    data: {
      resultType: "vector",
      result: series.map((s) => ({ metric: s.metric, value: [1767225600, s.value] })),
    },
  });
}

/**
 * A fake Prometheus HTTP API: `/api/v1/query` answers with `answer(query)`;
 * `hang` makes requests wait until the client aborts (or the server closes).
 */
class FakePrometheus {
  queries: string[] = [];
  aborted = 0;
  hang = false;
  answer: (query: string) => Response = () => vector([]);
  #release = Promise.withResolvers<void>();
  #server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        const url = new URL(req.url);
        if (url.pathname !== "/prom/api/v1/query") {
          return new Response("not found", { status: 404 });
        }
        const query = url.searchParams.get("query") ?? "";
        this.queries.push(query);
        if (this.hang) {
          const aborted = new Promise<void>((r) =>
            req.signal.addEventListener("abort", () => r(), { once: true })
          );
          await Promise.race([aborted.then(() => this.aborted++), this.#release.promise]);
          return new Response("late", { status: 503 });
        }
        return this.answer(query);
      },
    );
  }

  /** The base URL (with a path prefix, as behind a proxy, and a trailing slash). */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}/prom/`;
  }

  async close() {
    this.#release.resolve();
    await this.#server.shutdown();
  }
}

interface Harness {
  prom: FakePrometheus;
  clock: FakeClock;
  q: HealthQueries;
  results: string[];
}

async function withService(
  fn: (h: Harness) => Promise<void>,
  options: Partial<HealthQueriesOptions> = {},
): Promise<void> {
  const prom = new FakePrometheus();
  const clock = new FakeClock();
  const results: string[] = [];
  const q = new HealthQueries({
    clock,
    intervalMs: INTERVAL,
    timeoutMs: TIMEOUT,
    onResult: (pool, node) => results.push(`${pool}/${node}`),
    ...options,
  });
  try {
    await fn({ prom, clock, q, results });
  } finally {
    await q.close();
    await prom.close();
  }
}

/** Lets one poll interval pass and waits until the next answer is recorded. */
async function nextPoll(h: Harness): Promise<void> {
  const n = h.q.recorded;
  h.clock.advance(INTERVAL);
  await until(() => h.q.recorded > n, "the next answer");
}

const FIRING = (node: string) => vector([{ metric: { __name__: "ALERTS", node }, value: "1" }]);

Deno.test("queryUrl replaces every $node and encodes the query under the base URL", () => {
  assert.equal(
    queryUrl({ url: "http://prom:9090/", query: 'up{instance="$node"} == 0 or $node' }, "n-1"),
    "http://prom:9090/api/v1/query?query=up%7Binstance%3D%22n-1%22%7D+%3D%3D+0+or+n-1",
  );
  assert.equal(
    queryUrl({ url: "https://h/prometheus", query: "vector(1)" }, "x"),
    "https://h/prometheus/api/v1/query?query=vector%281%29",
  );
});

Deno.test("interpretResponse: empty vector and matrix, series named (at most 3), errors", () => {
  const ok = (resultType: string, result: unknown) =>
    JSON.stringify({ status: "success", data: { resultType, result } });
  assert.deepEqual(interpretResponse(200, ok("vector", [])), { kind: "empty" });
  assert.deepEqual(interpretResponse(200, ok("matrix", [])), { kind: "empty" });

  const four = ["a", "b", "c", "d"].map((n, i) => ({
    metric: { __name__: "up", instance: n, job: "j" },
    value: [1, String(i)],
  }));
  const r = interpretResponse(200, ok("vector", four));
  assert.equal(r.kind, "nonEmpty");
  assert.equal(
    r.kind === "nonEmpty" && r.message,
    'query returned 4 series: up{instance="a",job="j"} = 0, up{instance="b",job="j"} = 1, ' +
      'up{instance="c",job="j"} = 2, …',
  );
  // A matrix names the last sample; a series without labels prints as {}.
  const m = interpretResponse(200, ok("matrix", [{ metric: {}, values: [[1, "7"], [2, "8"]] }]));
  assert.equal(m.kind === "nonEmpty" && m.message, "query returned 1 series: {} = 8");
  // Only the series identify a non-empty answer, not their values.
  const again = interpretResponse(
    200,
    ok("vector", four.map((s) => ({ ...s, value: [2, "9"] }))),
  );
  assert.ok(r.kind === "nonEmpty" && again.kind === "nonEmpty");
  assert.equal(r.signature, again.signature);

  assert.deepEqual(interpretResponse(200, ok("scalar", [1, "1"])), {
    kind: "error",
    message: "the query returns a scalar result, not a vector: write it so that it selects " +
      "series (e.g. a comparison or an alert expression)",
  });
  assert.deepEqual(
    interpretResponse(
      400,
      JSON.stringify({ status: "error", errorType: "bad_data", error: "parse error: x" }),
    ),
    { kind: "error", message: "HTTP 400: bad_data: parse error: x" },
  );
  assert.deepEqual(interpretResponse(502, "<html>Bad Gateway</html>\n"), {
    kind: "error",
    message: "HTTP 502: <html>Bad Gateway</html>",
  });
  assert.equal(formatSeries({ __name__: "x", b: "2", a: 'q"' }), 'x{a="q\\"",b="2"}');
});

Deno.test("nextVerdict: a streak starts at the first empty answer, series end it, errors keep it", () => {
  const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const empty = { kind: "empty" } as const;
  const series = { kind: "nonEmpty", message: "1 series", signature: "s" } as const;
  const error = { kind: "error", message: "down" } as const;
  let v = nextVerdict(undefined, empty, t(0));
  assert.deepEqual(v, { last: "empty", emptySince: t(0) });
  v = nextVerdict(v, empty, t(5));
  assert.deepEqual(v, { last: "empty", emptySince: t(0) });
  v = nextVerdict(v, error, t(10));
  assert.deepEqual(v, { last: "error", emptySince: t(0), message: "down" });
  v = nextVerdict(v, empty, t(15));
  assert.deepEqual(v, { last: "empty", emptySince: t(0) });
  v = nextVerdict(v, series, t(20));
  assert.deepEqual(v, { last: "nonEmpty", message: "1 series" });
  v = nextVerdict(v, error, t(25));
  assert.deepEqual(v, { last: "error", message: "down" });
  v = nextVerdict(v, empty, t(30));
  assert.deepEqual(v, { last: "empty", emptySince: t(30) });
});

Deno.test("HealthQueries polls per node with $node replaced, keeps the streak and wakes the pool", async () => {
  await withService(async (h) => {
    const { prom, clock, q, results } = h;
    const firing = new Set<string>();
    prom.answer = (query) => {
      const node = /node="([^"]*)"/.exec(query)?.[1] ?? "";
      return firing.has(node) ? FIRING(node) : vector([]);
    };
    const check = { url: prom.url, query: 'ALERTS{node="$node"}', forSeconds: 12 };
    const t0 = clock.now();

    // The first call never waits: no verdict yet; the query runs in the background.
    assert.equal(q.want("pool-a", "n1", check), undefined);
    await until(() => q.recorded === 1, "the first answer");
    assert.deepEqual(prom.queries, ['ALERTS{node="n1"}']);
    assert.deepEqual(q.verdict("pool-a", "n1"), { last: "empty", emptySince: t0 });
    assert.deepEqual(results, ["pool-a/n1"]);

    // Empty again: the streak runs on; nothing new to report until it is long enough.
    await nextPoll(h);
    assert.deepEqual(q.verdict("pool-a", "n1"), { last: "empty", emptySince: t0 });
    assert.deepEqual(results, ["pool-a/n1"]);
    await nextPoll(h); // 10 s: still short of 12 s
    assert.deepEqual(results, ["pool-a/n1"]);
    await nextPoll(h); // 15 s ≥ 12 s: the check can pass now, the pool is woken once
    assert.deepEqual(results, ["pool-a/n1", "pool-a/n1"]);
    await nextPoll(h);
    assert.deepEqual(results, ["pool-a/n1", "pool-a/n1"]);
    assert.equal(prom.queries.length, 5);

    // An alert fires: the streak ends and the message names the series.
    firing.add("n1");
    await nextPoll(h);
    assert.deepEqual(q.verdict("pool-a", "n1"), {
      last: "nonEmpty",
      message: 'query returned 1 series: ALERTS{node="n1"} = 1',
    });
    assert.equal(results.length, 3);
    // Still firing with the same series: no news.
    await nextPoll(h);
    assert.equal(results.length, 3);

    // Resolved: a new streak starts at this answer.
    firing.delete("n1");
    await nextPoll(h);
    const restarted = clock.now();
    assert.deepEqual(q.verdict("pool-a", "n1"), { last: "empty", emptySince: restarted });
    assert.equal(results.length, 4);

    // A second node of the pool is polled on its own, with its own name in the query.
    firing.add("n2");
    assert.equal(q.want("pool-a", "n2", check), undefined);
    await until(() => q.verdict("pool-a", "n2") !== undefined, "n2's first answer");
    assert.equal(q.verdict("pool-a", "n2")?.last, "nonEmpty");
    assert.ok(prom.queries.includes('ALERTS{node="n2"}'));
    assert.deepEqual(q.keys, ["pool-a/n1", "pool-a/n2"]);
    assert.equal(q.verdict("pool-a", "n1")?.emptySince?.getTime(), restarted.getTime());
  });
});

Deno.test("HealthQueries: errors name the URL and keep the streak; a scalar query is an error", async () => {
  await withService(async (h) => {
    const { prom, clock, q, results } = h;
    let mode: "empty" | "500" | "bad" = "empty";
    prom.answer = () =>
      mode === "500"
        ? Response.json({ status: "error", errorType: "internal", error: "boom" }, { status: 500 })
        : mode === "bad"
        ? Response.json({ status: "success", data: { resultType: "scalar", result: [1, "1"] } })
        : vector([]);
    const check = { url: prom.url, query: "absent(up)", forSeconds: 60 };
    const t0 = clock.now();
    q.want("p", "n", check);
    await until(() => q.recorded === 1, "the first answer");

    mode = "500";
    await nextPoll(h);
    const base = prom.url.replace(/\/$/, "");
    assert.deepEqual(q.verdict("p", "n"), {
      last: "error",
      emptySince: t0,
      message: `Prometheus at ${base}: HTTP 500: internal: boom`,
    });
    assert.equal(results.length, 2);
    // The same error again is no news.
    await nextPoll(h);
    assert.equal(results.length, 2);
    mode = "bad";
    await nextPoll(h);
    assert.equal(q.verdict("p", "n")?.last, "error");
    assert.match(q.verdict("p", "n")?.message ?? "", /scalar result, not a vector/);
    assert.equal(results.length, 3);

    // Back to empty: the streak from before the errors goes on.
    mode = "empty";
    await nextPoll(h);
    assert.deepEqual(q.verdict("p", "n"), { last: "empty", emptySince: t0 });
  });
});

Deno.test("HealthQueries: an unreachable Prometheus is an error naming its URL", async () => {
  // A port nobody listens on: bind one, then close it.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await withService(async ({ q }) => {
    q.want("p", "n", { url: `http://127.0.0.1:${port}`, query: "up == 0" });
    await until(() => q.recorded === 1, "the failed query");
    const v = q.verdict("p", "n");
    assert.equal(v?.last, "error");
    assert.ok(v?.message?.includes(`http://127.0.0.1:${port}`), v?.message);
    assert.ok(!v?.message?.includes("query="), `the long query URL is not repeated: ${v?.message}`);
    assert.equal(v?.emptySince, undefined);
  });
});

Deno.test("HealthQueries aborts a query Prometheus does not answer within the timeout", async () => {
  await withService(async (h) => {
    const { prom, clock, q } = h;
    prom.hang = true;
    q.want("p", "n", { url: prom.url, query: "up == 0" });
    await until(() => prom.queries.length === 1, "the request to arrive");
    assert.equal(q.verdict("p", "n"), undefined);
    clock.advance(TIMEOUT - 1);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(q.recorded, 0, "not before the timeout");
    clock.advance(1);
    await until(() => q.recorded === 1, "the timeout to be recorded");
    assert.deepEqual(q.verdict("p", "n"), {
      last: "error",
      message: `Prometheus at ${prom.url.replace(/\/$/, "")} did not answer within 3s`,
    });
    // The request was aborted, not left running.
    await until(() => prom.aborted === 1, "the server to see the abort");
    // The next poll answers normally.
    prom.hang = false;
    await nextPoll(h);
    assert.equal(q.verdict("p", "n")?.last, "empty");
  });
});

Deno.test("HealthQueries drops keys no pool wants, aborting their queries; a changed query starts over", async () => {
  await withService(async (h) => {
    const { prom, q } = h;
    const check = { url: prom.url, query: 'up{instance="$node"}' };
    const got = q.wantOnly("p", new Map([["a", check], ["b", check]]));
    assert.equal(got.size, 0);
    await until(() => q.recorded === 2, "both answers");
    assert.deepEqual(q.keys, ["p/a", "p/b"]);
    const again = q.wantOnly("p", new Map([["a", check], ["b", check]]));
    assert.deepEqual([...again.keys()].sort(), ["a", "b"]);
    assert.equal(q.queries, 2, "wanting again does not query again");

    // b leaves the set: its key goes and its loop stops (no more queries for it).
    q.wantOnly("p", new Map([["a", check]]));
    assert.deepEqual(q.keys, ["p/a"]);
    assert.equal(q.verdict("p", "b"), undefined);
    await nextPoll(h);
    assert.deepEqual(prom.queries.slice(2), ['up{instance="a"}']);

    // A hanging query of a dropped key is aborted at once.
    prom.hang = true;
    q.want("p", "c", check);
    await until(() => prom.queries.includes('up{instance="c"}'), "c's request");
    q.forget("p", "c");
    await until(() => prom.aborted === 1, "c's request to be aborted");
    assert.equal(q.verdict("p", "c"), undefined);
    prom.hang = false;

    // A changed query is a new check: the old verdict is gone until the new one answers.
    const before = q.recorded;
    assert.equal(q.want("p", "a", { ...check, query: 'node_up{node="$node"}' }), undefined);
    await until(() => q.recorded > before, "the new query's answer");
    assert.ok(prom.queries.includes('node_up{node="a"}'));
    assert.equal(q.verdict("p", "a")?.last, "empty");

    // Forgetting a pool drops all of its keys; close() stops the rest.
    q.want("other", "x", check);
    q.forget("p");
    assert.deepEqual(q.keys, ["other/x"]);
    await q.close();
    assert.deepEqual(q.keys, []);
  });
});
