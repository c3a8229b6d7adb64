/**
 * Measures the idle memory of the lib/kube client: starts a child `deno run`
 * of lib/kube/bench/idle_client.ts (one client, one informer on one object),
 * waits until it has synced plus a settle time, and prints the child's VmRSS
 * from /proc/<pid>/status in MiB.
 *
 * Usage: deno run --allow-all tools/measure_client_rss.ts KUBECONFIG [--seconds 10] [--max 45]
 * Exits 1 when the RSS exceeds --max MiB.
 *
 * Measured on Deno 2.9.6 (x86_64): an idle `deno run` alone is 34-37 MiB and
 * one TLS `fetch` through `Deno.createHttpClient` adds about 10 MiB, so the
 * in-cluster path (and a JSON kubeconfig) lands near 46 MiB. A YAML kubeconfig
 * loads the CommonJS `yaml` package and Deno's Node layer: about +14 MiB.
 *
 * @module
 */

const CHILD = new URL("../lib/kube/bench/idle_client.ts", import.meta.url).pathname;

/** Parses `VmRSS:  12345 kB` from a /proc/<pid>/status text into MiB. */
export function vmRssMiB(status: string): number {
  const m = status.match(/^VmRSS:\s+(\d+)\s+kB$/m);
  if (!m) throw new Error("no VmRSS line");
  return Number(m[1]) / 1024;
}

function flag(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

async function main(args: string[]): Promise<number> {
  const kubeconfig = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
  if (!kubeconfig) {
    console.error("usage: measure_client_rss.ts KUBECONFIG [--seconds 10] [--max 45]");
    return 2;
  }
  const seconds = flag(args, "--seconds", 10);
  const max = flag(args, "--max", 45);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", CHILD, kubeconfig],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    const deadline = setTimeout(() => child.kill("SIGKILL"), 60_000);
    while (!out.includes("synced")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the child exited before syncing");
      out += value;
    }
    clearTimeout(deadline);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const rss = vmRssMiB(await Deno.readTextFile(`/proc/${child.pid}/status`));
    console.log(
      `idle lib/kube client + 1 informer: VmRSS ${rss.toFixed(1)} MiB after ${seconds} s ` +
        `(target <= ${max} MiB)`,
    );
    child.kill("SIGTERM");
    await reader.cancel();
    await child.status;
    return rss <= max ? 0 : 1;
  } catch (e) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await child.status;
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
