/**
 * The bootc-operator node daemon.
 *
 * `run` watches this node's BootcNode and drives bootc; `status` prints the
 * status the daemon would write, for debugging on a bootc host without a
 * cluster. See daemon/README.md. Heavy modules (the Kubernetes client, the
 * agent) are imported only by the command that needs them, to keep the
 * resident memory of an idle daemon small.
 *
 * @module
 */
import {
  type Command,
  parseCommandLine,
  type RunCommand,
  type StatusCommand,
  USAGE,
  UsageError,
} from "./cli.ts";
import type { HostBootcExecutor } from "../lib/bootc/executor.ts";
import type { HostAccess } from "../lib/bootc/host_namespace.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import { logVersion, versionLine } from "../lib/version.ts";

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * Where the host is: detected (the daemon's mount namespace against PID
 * `--host-pid`'s), unless both `--host-exec-prefix` and `--host-root` are given.
 * Logged once, as a warning when the answer rests on an assumption.
 */
async function hostAccess(cmd: RunCommand | StatusCommand, log: Logger): Promise<HostAccess> {
  const { detectHostAccess } = await import("../lib/bootc/host_namespace.ts");
  const access = await detectHostAccess({
    hostPid: cmd.hostPid,
    hostExecPrefix: cmd.hostExecPrefix,
    hostRoot: cmd.hostRoot,
  });
  const fields = {
    mode: access.mode,
    hostExecPrefix: access.hostExecPrefix,
    hostRoot: access.hostRoot,
    reason: access.reason,
  };
  if (access.warning) log.warn("host access", fields);
  else log.info("host access", fields);
  return access;
}

async function hostExecutor(
  cmd: RunCommand | StatusCommand,
  access: HostAccess,
): Promise<HostBootcExecutor> {
  const { HostBootcExecutor } = await import("../lib/bootc/executor.ts");
  return new HostBootcExecutor({
    bootcCommand: cmd.bootcCommand,
    systemctlCommand: cmd.systemctlCommand,
    blessBootCommand: cmd.blessBootCommand,
    hostExecPrefix: access.hostExecPrefix,
    transientUnits: cmd.transientUnits,
    timeouts: { statusMs: cmd.statusTimeoutMs, stageMs: cmd.stageTimeoutMs },
  });
}

async function run(cmd: RunCommand, log: Logger): Promise<number> {
  const controller = new AbortController();
  try {
    return await runAgent(cmd, log, controller);
  } finally {
    controller.abort(); // stops the host watch also when the agent failed
  }
}

async function runAgent(
  cmd: RunCommand,
  log: Logger,
  controller: AbortController,
): Promise<number> {
  const [
    { KubeClient },
    { Resources },
    { EventRecorder },
    { Agent },
    { watchHost },
  ] = await Promise.all([
    import("../lib/kube/client.ts"),
    import("../lib/kube/resources.ts"),
    import("../lib/kube/events.ts"),
    import("./agent.ts"),
    import("./host_watch.ts"),
  ]);
  const access = await hostAccess(cmd, log);
  const client = await KubeClient.fromEnvironment({ path: cmd.kubeconfig, context: cmd.context });
  const stop = (signal: string) => {
    if (controller.signal.aborted) return;
    log.info("stopping", { signal });
    controller.abort();
  };
  const onTerm = () => stop("SIGTERM");
  const onInt = () => stop("SIGINT");
  Deno.addSignalListener("SIGTERM", onTerm);
  Deno.addSignalListener("SIGINT", onInt);
  try {
    const agent = new Agent({
      nodeName: cmd.nodeName,
      nodes: client.resource(Resources.bootcNodes),
      // Only GET of this node, when an apply is due (RBAC: get on nodes).
      coreNodes: client.resource(Resources.nodes),
      // BootcNodes are cluster-scoped: their events live in "default" (the recorder's default).
      events: new EventRecorder({
        client,
        component: "bootc-operator-daemon",
        host: cmd.nodeName,
        logger: log,
      }),
      secrets: (namespace) => client.resource(Resources.secrets, namespace),
      executor: await hostExecutor(cmd, access),
      hostRoot: access.hostRoot,
      pollIntervalMs: cmd.pollIntervalMs,
      statusBusyGraceMs: cmd.statusBusyGraceMs,
      healthCheck: {
        startingMs: cmd.healthIntervalMs,
        settledMs: cmd.healthIntervalSettledMs,
      },
      logger: log,
    });
    log.info("starting", {
      hostRoot: access.hostRoot,
      bootcCommand: cmd.bootcCommand,
      hostExecPrefix: access.hostExecPrefix,
      pollIntervalMs: cmd.pollIntervalMs,
    });
    const watching = watchHost({
      hostRoot: access.hostRoot,
      onChange: () => agent.kick(),
      logger: log,
    }, controller.signal);
    await agent.run(controller.signal);
    await watching;
    log.info("stopped");
    return 0;
  } finally {
    Deno.removeSignalListener("SIGTERM", onTerm);
    Deno.removeSignalListener("SIGINT", onInt);
    client.close();
  }
}

async function status(cmd: StatusCommand, log: Logger): Promise<number> {
  const [
    { decide },
    { capabilitiesFromVersion },
    { ownedByPool, rebootAuthorization },
    { RebootAllowedReason },
    { checkHostHealth, healthScope },
  ] = await Promise.all([
    import("./decide.ts"),
    import("../lib/bootc/version.ts"),
    import("../lib/api/annotations.ts"),
    import("../lib/api/constants.ts"),
    import("./health.ts"),
  ]);
  type NodeForReboot = import("../lib/api/annotations.ts").NodeForReboot;
  type RebootAuthorization = import("../lib/api/annotations.ts").RebootAuthorization;
  type Spec = import("../lib/api/schema.ts").BootcNodeSpec;
  type Status = import("../lib/api/schema.ts").BootcNodeStatus;
  let spec: Spec | undefined;
  let previous: Status | undefined;
  let generation: number | undefined;
  let annotations: Record<string, string> | undefined;
  // Offline (--desired-image) the flags stand in for the controller, but there is no Node to
  // authorize a reboot: the daemon would keep the image staged, and so says status.
  let owned = true;
  let node: NodeForReboot | undefined;
  let reboot: RebootAuthorization | undefined = {
    allowed: false,
    reason: RebootAllowedReason.NoRebootSlot,
    message: "offline evaluation (--desired-image): there is no Node to hold a reboot slot; " +
      "the daemon applies only on a Node that holds one and is drained",
  };
  if (cmd.nodeName) {
    const [{ KubeClient }, { Resources }] = await Promise.all([
      import("../lib/kube/client.ts"),
      import("../lib/kube/resources.ts"),
    ]);
    const client = await KubeClient.fromEnvironment({ path: cmd.kubeconfig, context: cmd.context });
    try {
      const bn = await client.resource<import("../lib/api/schema.ts").BootcNode>(
        Resources.bootcNodes,
      ).get(cmd.nodeName);
      spec = bn.spec;
      previous = bn.status;
      generation = bn.metadata?.generation;
      annotations = bn.metadata?.annotations;
      owned = ownedByPool(bn);
      // The Node is read only when the daemon would read it: Booted asked of an owned node.
      reboot = undefined;
      if (owned && spec.desiredImageState === "Booted") {
        try {
          node = await client.resource<import("../lib/kube/types.ts").KubeObject & NodeForReboot>(
            Resources.nodes,
          ).get(cmd.nodeName);
        } catch (e) {
          log.warn("reading the Node failed", { error: e });
        }
        reboot = rebootAuthorization(node, bn);
      }
    } finally {
      client.close();
    }
  } else if (cmd.desiredImage) {
    spec = {
      desiredImage: cmd.desiredImage,
      desiredImageState: cmd.desiredImageState,
      rebootPolicy: cmd.rebootPolicy,
    };
  }
  const executor = await hostExecutor(cmd, await hostAccess(cmd, log));
  const now = new Date();
  let capabilities;
  try {
    capabilities = capabilitiesFromVersion(await executor.version());
  } catch (e) {
    capabilities = { problem: `cannot run bootc --version: ${e instanceof Error ? e.message : e}` };
  }
  let host: import("./decide.ts").HostObservation;
  try {
    host = { ok: true, host: await executor.status() };
  } catch (e) {
    const timedOut = (e as { timedOut?: boolean }).timedOut === true;
    // A one-shot read has no grace period: report what happened.
    host = {
      ok: false,
      message: e instanceof Error ? e.message : String(e),
      timedOut,
      since: new Date(0),
    };
  }
  let masked = false;
  try {
    masked = await executor.autoUpdatesMasked();
  } catch (e) {
    log.warn("cannot tell whether the auto-update timer is masked", { error: e });
  }
  const health = await checkHostHealth(executor, healthScope(spec), () => new Date());
  const decision = decide({
    spec,
    owned,
    reboot,
    node,
    health,
    status: previous,
    generation,
    annotations,
    host,
    capabilities,
    autoUpdatesMasked: masked,
    now,
  });
  log.info("decision", {
    action: decision.action,
    changed: decision.changed,
    source: cmd.nodeName ? "api" : cmd.desiredImage ? "flags" : "none",
  });
  console.log(JSON.stringify(decision.status, null, 2));
  return 0;
}

/** Runs the daemon with `args`; resolves to the exit code. */
export async function main(args: string[]): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseCommandLine(args, env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`daemon: ${e.message}\n(daemon --help lists the commands and flags)`);
    return 2;
  }
  if (cmd.command === "help" || cmd.command === "version") {
    console.log(cmd.command === "help" ? USAGE : versionLine("daemon"));
    return 0;
  }
  const log = createLogger({
    level: cmd.logLevel,
    format: cmd.logFormat,
    fields: {
      component: "daemon",
      ...(cmd.command === "run" || cmd.nodeName ? { node: cmd.nodeName } : {}),
    },
  });
  logVersion(log);
  try {
    return cmd.command === "run" ? await run(cmd, log) : await status(cmd, log);
  } catch (e) {
    log.error(`${cmd.command} failed`, { error: e });
    return 1;
  }
}

if (import.meta.main) {
  // Exit explicitly: a detached bootc --apply may still run and must not hold the daemon.
  Deno.exit(await main(Deno.args));
}
