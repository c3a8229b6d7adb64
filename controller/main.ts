/**
 * The controller executable: parses flags, builds the client, the Pool
 * Reconciler, the metrics/probe server and (by default) a Lease leader
 * election, and shuts down cleanly on SIGTERM/SIGINT.
 *
 * ```
 * deno run <CONTROLLER_PERMISSIONS of tools/build.ts> controller/main.ts [--kubeconfig PATH] [--namespace bootc-operator]
 *   [--metrics-addr :8080] [--registry-poll-interval 5m] [--registry-timeout 10s]
 *   [--insecure-registry HOST]...
 *   [--registry-ca-file PATH] [--leader-elect=true|false] [--leader-election-id ID]
 *   [--log-level debug|info|warn|error] [--log-format json|text] [--version]
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { EventRecorder, KubeClient, LeaderElector } from "../lib/kube/mod.ts";
import { shiftedClock } from "../lib/clock.ts";
import {
  createLogger,
  type LogFormat,
  type LogLevel,
  parseLogFormat,
  parseLogLevel,
} from "../lib/log.ts";
import { logVersion, versionLine, wantsVersion } from "../lib/version.ts";
import { ControllerMetrics } from "./shell/metrics.ts";
import { PoolReconciler } from "./shell/reconciler.ts";
import { RegistryImageResolver } from "./pollers/resolver.ts";
import { registryTagLister } from "./pollers/channel_checks.ts";
import { startServer } from "./shell/server.ts";

/** Parsed command line. */
export interface ControllerFlags {
  kubeconfig?: string;
  namespace: string;
  metricsAddr: string;
  registryPollIntervalMs: number;
  /** How long one tag resolution may take before it is aborted and retried with backoff. */
  registryTimeoutMs: number;
  insecureRegistries: string[];
  registryCaFile?: string;
  leaderElect: boolean;
  leaderElectionId: string;
  /** `--log-level`; undefined: `LOG_LEVEL` or info. */
  logLevel?: LogLevel;
  logFormat: LogFormat;
  /** `--node-name`: the node this controller runs on (it gets its reboot slot last). */
  nodeName?: string;
  /**
   * Test only: the time the reconciler's clock starts at (it then runs at real speed),
   * so end-to-end tests can exercise maintenance windows without waiting for them.
   */
  testStartTime?: Date;
}

/** What `controller --help` prints (flags with their defaults). */
export const USAGE = `Usage: controller [flags]

The bootc-operator controller: plans and rolls out BootcNodePools (normally run by the
bootc-operator-controller Deployment in manifests/install.yaml).

Flags:
  --kubeconfig PATH            kubeconfig to use (default: in-cluster, then $KUBECONFIG)
  --namespace NS               the operator's namespace: pull Secrets, events, the Lease
                               (default bootc-operator)
  --metrics-addr ADDR          /metrics, /healthz and /readyz listen address (default :8080)
  --registry-poll-interval DUR how often tags are resolved when a pool sets none (default 5m)
  --registry-timeout DUR       time limit of one tag resolution (default 10s)
  --insecure-registry HOST     a registry reached over plain HTTP (repeatable)
  --registry-ca-file PATH      extra CA bundle for registries (PEM)
  --leader-elect=true|false    elect a leader with a Lease; only the leader writes (default true)
  --leader-election-id NAME    the Lease's name (default bootc-operator-controller)
  --log-level LEVEL            debug, info, warn or error (default $LOG_LEVEL, else info)
  --log-format FORMAT          json or text, the log lines on stderr (default json)
  --node-name NAME             the node this controller runs on: it gets its reboot slot
                               last (the Deployment sets it from spec.nodeName)
  --version                    print the version and commit and exit
  -h, --help                   print this help and exit

Durations are Go-style: 250ms, 30s, 5m, 1h30m.
Exit codes: 0 stopped cleanly, or help or the version printed; 1 failed; 2 bad flags.`;

/** True when the command line asks for help (it is then the only thing done). */
export function wantsHelp(args: readonly string[]): boolean {
  return args.some((a) => a === "--help" || a === "-h" || a === "help");
}

/** Parses a Go-style duration ("90s", "5m", "1h30m", "250ms"); a bare number is seconds. */
export function parseDuration(text: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = text;
  while (rest.length > 0) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (!m) throw new Error(`invalid duration ${JSON.stringify(text)} (e.g. 30s, 5m, 1h)`);
    total += Number(m[1]) * units[m[2]];
    rest = rest.slice(m[0].length);
  }
  if (total <= 0) throw new Error(`duration ${JSON.stringify(text)} must be positive`);
  return total;
}

function parseBool(name: string, value: string | undefined): boolean {
  if (value === undefined || value === "" || value === "true") return true;
  if (value === "false") return false;
  throw new Error(`--${name} must be true or false, not ${JSON.stringify(value)}`);
}

/** Parses the controller's flags. */
export function parseFlags(args: string[]): ControllerFlags {
  // --leader-elect may be given bare or as --leader-elect=false.
  const normalized = args.map((a) => a === "--leader-elect" ? "--leader-elect=true" : a);
  const { values } = parseArgs({
    args: normalized,
    strict: true,
    options: {
      kubeconfig: { type: "string" },
      namespace: { type: "string", default: "bootc-operator" },
      "metrics-addr": { type: "string", default: ":8080" },
      "registry-poll-interval": { type: "string", default: "5m" },
      "registry-timeout": { type: "string", default: "10s" },
      "insecure-registry": { type: "string", multiple: true, default: [] },
      "registry-ca-file": { type: "string" },
      "leader-elect": { type: "string", default: "true" },
      "leader-election-id": { type: "string", default: "bootc-operator-controller" },
      "test-start-time": { type: "string" },
      "log-level": { type: "string" },
      "log-format": { type: "string", default: "json" },
      "node-name": { type: "string" },
    },
  });
  const start = values["test-start-time"];
  const testStartTime = start === undefined ? undefined : new Date(start);
  if (testStartTime && Number.isNaN(testStartTime.getTime())) {
    throw new Error(`--test-start-time must be an RFC 3339 time, not ${JSON.stringify(start)}`);
  }
  return {
    kubeconfig: values.kubeconfig,
    namespace: values.namespace!,
    metricsAddr: values["metrics-addr"]!,
    registryPollIntervalMs: parseDuration(values["registry-poll-interval"]!),
    registryTimeoutMs: parseDuration(values["registry-timeout"]!),
    insecureRegistries: values["insecure-registry"] ?? [],
    registryCaFile: values["registry-ca-file"],
    leaderElect: parseBool("leader-elect", values["leader-elect"]),
    leaderElectionId: values["leader-election-id"]!,
    ...(values["log-level"] === undefined ? {} : { logLevel: parseLogLevel(values["log-level"]) }),
    logFormat: parseLogFormat(values["log-format"]!),
    ...(values["node-name"] ? { nodeName: values["node-name"] } : {}),
    ...(testStartTime ? { testStartTime } : {}),
  };
}

/** Runs the controller until `signal` aborts. */
export async function runController(flags: ControllerFlags, signal: AbortSignal): Promise<void> {
  const log = createLogger({
    level: flags.logLevel,
    format: flags.logFormat,
    fields: { component: "controller" },
  });
  logVersion(log);
  const client = await KubeClient.fromEnvironment({ path: flags.kubeconfig });
  const identity = `${Deno.hostname()}-${crypto.randomUUID().slice(0, 8)}`;
  const metrics = new ControllerMetrics();
  const caCertPem = flags.registryCaFile
    ? await Deno.readTextFile(flags.registryCaFile)
    : undefined;
  const events = new EventRecorder({
    client,
    component: "bootc-operator-controller",
    host: identity,
    // Pools, BootcNodes and Nodes are cluster-scoped: their events must live in "default".
    logger: log,
    // Repeats of one event (a drain blocked pass after pass) patch its count at most every
    // 10 s; the rest is written by the next patch or the flush at shutdown.
    minPatchIntervalMs: 10_000,
  });
  const reconciler = new PoolReconciler({
    client,
    namespace: flags.namespace,
    // In a pod the hostname is the pod's name (also the Lease identity's first part).
    ownPodName: Deno.hostname(),
    ...(flags.nodeName ? { controllerNode: flags.nodeName } : {}),
    resolver: new RegistryImageResolver({
      insecureRegistries: flags.insecureRegistries,
      caCertPem,
      timeoutMs: flags.registryTimeoutMs,
    }),
    // Resolution runs beside the work queue with this timeout, so a registry that
    // never answers delays only the pools that use it.
    tagResolution: { timeoutMs: flags.registryTimeoutMs },
    // Channel pools' tags are listed the same way (a listing may take several pages).
    channelLister: registryTagLister({
      insecureRegistries: flags.insecureRegistries,
      caCertPem,
      timeoutMs: flags.registryTimeoutMs,
    }),
    events,
    metrics,
    logger: log,
    planner: { defaultPollIntervalMs: flags.registryPollIntervalMs },
    ...(flags.testStartTime ? { clock: shiftedClock(flags.testStartTime) } : {}),
  });
  const server = startServer({
    addr: flags.metricsAddr,
    signal,
    metrics: metrics.registry,
    ready: () => reconciler.hasSynced(),
    logger: log,
  });
  const caches = reconciler.startCaches(signal);
  try {
    if (!flags.leaderElect) {
      await reconciler.runWorkers(signal);
    } else {
      const elector = new LeaderElector({
        client,
        namespace: flags.namespace,
        name: flags.leaderElectionId,
        identity,
        logger: log,
      });
      while (!signal.aborted) {
        await elector.run({
          onStartedLeading: (leading) =>
            reconciler.runWorkers(leading, { holdsLease: () => elector.holdsLease() }),
          onStoppedLeading: () => log.info("stopped leading", { identity }),
        }, signal);
      }
    }
  } catch (e) {
    if (!signal.aborted) throw e;
  } finally {
    await caches.catch(() => {});
    await events.flush();
    await server.finished;
    client.close();
  }
  log.info("controller stopped");
}

if (import.meta.main) {
  if (wantsHelp(Deno.args)) {
    console.log(USAGE);
    Deno.exit(0);
  }
  if (wantsVersion(Deno.args)) {
    console.log(versionLine("controller"));
    Deno.exit(0);
  }
  let flags: ControllerFlags;
  try {
    flags = parseFlags(Deno.args);
  } catch (e) {
    console.error(`controller: ${(e as Error).message}\n(controller --help lists the flags)`);
    Deno.exit(2);
  }
  const ac = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(sig, () => ac.abort(new Error(`received ${sig}`)));
  }
  await runController(flags, ac.signal);
  Deno.exit(0);
}
