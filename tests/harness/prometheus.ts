/**
 * A real Prometheus for tests: Debian's `/usr/bin/prometheus` (installed by
 * `tests/prepare.sh`), scraping itself and any extra targets every second and, with
 * `rules`, evaluating those alert rules every second, so its answers (and its `ALERTS`
 * series) are the server's own, not an emulation.
 *
 * @module
 */
import { waitFor } from "./wait.ts";

const PROMETHEUS = "/usr/bin/prometheus";

/** A running Prometheus. */
export interface RunningPrometheus {
  url: string;
  /** The `instance` label of its self-scrape. */
  instance: string;
  /** Stops it (SIGTERM) and removes its data. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startPrometheus}. */
export interface PrometheusOptions {
  /** A rule file's text (`groups: …`), evaluated every second. */
  rules?: string;
  /** More `host:port` targets scraped every second (job `targets`). */
  targets?: readonly string[];
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

function config(instance: string, o: PrometheusOptions): string {
  const lines = [
    "global:",
    "  scrape_interval: 1s",
    "  scrape_timeout: 1s",
    "  evaluation_interval: 1s",
    ...(o.rules ? ["rule_files: [rules.yml]"] : []),
    "scrape_configs:",
    "  - job_name: prometheus",
    "    static_configs:",
    `      - targets: ["${instance}"]`,
  ];
  if (o.targets?.length) {
    lines.push(
      "  - job_name: targets",
      "    static_configs:",
      `      - targets: ${JSON.stringify(o.targets)}`,
    );
  }
  return [...lines, ""].join("\n");
}

/** Starts Prometheus; resolves once it is ready. */
export async function startPrometheus(o: PrometheusOptions = {}): Promise<RunningPrometheus> {
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
  await Deno.writeTextFile(`${dir}/prometheus.yml`, config(instance, o));
  if (o.rules) await Deno.writeTextFile(`${dir}/rules.yml`, o.rules);
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
    await waitFor(async () => {
      if (exited) throw new Error(`prometheus exited: ${log}`);
      try {
        const r = await fetch(`${url}/-/ready`);
        await r.body?.cancel();
        return r.ok;
      } catch {
        return false;
      }
    }, { timeoutMs: 60_000, message: "prometheus to be ready" });
  } catch (e) {
    await stop();
    throw new Error(`${e instanceof Error ? e.message : e}\nprometheus log:\n${log}`);
  }
  return { url, instance, stop };
}
