/**
 * The Prometheus health check against a real Prometheus (Debian's
 * `/usr/bin/prometheus`, installed by tests/prepare.sh) scraping itself: the
 * answers the service interprets are the server's own, not an emulation.
 */
import assert from "node:assert/strict";
import { HealthQueries } from "./health_queries.ts";

const PROMETHEUS = "/usr/bin/prometheus";

/** Waits (bounded) until `cond` holds. */
async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

interface RunningPrometheus {
  url: string;
  /** The `instance` label of its self-scrape. */
  instance: string;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping itself every second; resolves once it is ready. */
async function startPrometheus(): Promise<RunningPrometheus> {
  try {
    await Deno.stat(PROMETHEUS);
  } catch {
    throw new Error(
      `${PROMETHEUS} is missing: run \`bash tests/prepare.sh\` (Debian package prometheus)`,
    );
  }
  const dir = await Deno.makeTempDir({ prefix: "prom-test-" });
  const port = freePort();
  const instance = `127.0.0.1:${port}`;
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    [
      "global:",
      "  scrape_interval: 1s",
      "  scrape_timeout: 1s",
      "scrape_configs:",
      "  - job_name: prometheus",
      "    static_configs:",
      `      - targets: ["${instance}"]`,
      "",
    ].join("\n"),
  );
  const child = new Deno.Command(PROMETHEUS, {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=${instance}`,
      "--log.level=warn",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Drain stderr so the child never blocks on a full pipe; kept for failure messages.
  let log = "";
  const logDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (log += chunk) }),
  );
  let exited = false;
  const status = child.status.finally(() => exited = true);
  const stop = async () => {
    if (!exited) child.kill("SIGTERM");
    await status;
    await logDone;
    await Deno.remove(dir, { recursive: true });
  };
  const url = `http://${instance}`;
  try {
    await until(
      async () => {
        if (exited) throw new Error(`prometheus exited: ${log}`);
        try {
          const r = await fetch(`${url}/-/ready`);
          await r.body?.cancel();
          return r.ok;
        } catch {
          return false;
        }
      },
      "prometheus to be ready",
      60_000,
    );
  } catch (e) {
    await stop();
    throw new Error(`${e instanceof Error ? e.message : e}\nprometheus log:\n${log}`);
  }
  return { url, instance, stop };
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
