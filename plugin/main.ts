/**
 * `kubectl-bootc`: the operator's kubectl plugin. Put the executable on PATH and
 * run `kubectl bootc …` (kubectl finds plugins by their `kubectl-` name). See
 * plugin/README.md.
 *
 * Exit codes (`errors.ts` `ExitCode`): 0 done (`status`: no pool unhealthy); 1
 * `status`: a pool is degraded, halted, rolled back or its circuit is open, other
 * commands: refused (nothing to roll back, abort or retry); 2 a usage error, or a
 * pool or node that is not there; 3 the API server or the kubeconfig failed; 4
 * `status --strict`: a pool is still progressing.
 *
 * @module
 */
import { type Command, type GlobalFlags, parseCommandLine, USAGE, UsageError } from "./cli.ts";
import { ExitCode, NotFoundError } from "./errors.ts";
import type { PoolView } from "./status_view.ts";

const encoder = new TextEncoder();

async function out(text: string): Promise<void> {
  const bytes = encoder.encode(text);
  for (let written = 0; written < bytes.length;) {
    written += await Deno.stdout.write(bytes.subarray(written));
  }
}

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * `version`: the plugin's build always, the controller's as far as it can be read (a
 * kubeconfig or API failure is reported in the output and as exit code 3).
 */
async function version(flags: GlobalFlags, output: "text" | "json"): Promise<number> {
  const [
    { connect, readControllerDeployment },
    { OPERATOR_NAMESPACE, renderVersion, versionReport },
    { buildInfo },
    { errorText },
  ] = await Promise.all([
    import("./kube.ts"),
    import("./version.ts"),
    import("../lib/version.ts"),
    import("./format.ts"),
  ]);
  const namespace = flags.namespace ?? OPERATOR_NAMESPACE;
  let read: import("./version.ts").ControllerRead;
  try {
    const client = await connect(flags);
    try {
      read = await readControllerDeployment(client, namespace);
    } finally {
      client.close();
    }
  } catch (e) {
    read = { error: errorText(e) };
  }
  const report = versionReport(buildInfo(), namespace, read);
  await out(output === "json" ? JSON.stringify(report, null, 2) + "\n" : renderVersion(report));
  return "error" in read ? ExitCode.Failed : ExitCode.Ok;
}

/** Runs one command; returns the exit code (see `errors.ts` `ExitCode`). */
async function run(flags: GlobalFlags, cmd: Command): Promise<number> {
  if (cmd.command === "help") {
    await out(USAGE + "\n");
    return 0;
  }
  if (cmd.command === "version") return await version(flags, cmd.output);
  const [
    { connect, getPool, readSnapshot, readWhyInput, resources },
    { colorEnabled, createStyle },
  ] = await Promise.all([import("./kube.ts"), import("./style.ts")]);
  const isTerminal = Deno.stdout.isTerminal();
  const style = createStyle(
    colorEnabled({ isTerminal, noColorEnv: env("NO_COLOR"), noColorFlag: flags.noColor }),
  );
  const columns = () => {
    try {
      return Deno.consoleSize().columns;
    } catch {
      return 100;
    }
  };
  const client = await connect(flags);
  /** A write planned on a fresh read, retried on conflicts (`actions.ts` planAndPatch). */
  const steer = async (
    pool: string,
    plan: (p: import("./model.ts").BootcNodePool) => import("./actions.ts").ActionPlan,
  ) => {
    const { planAndPatch } = await import("./actions.ts");
    const pools = resources(client).pools;
    const done = await planAndPatch({
      get: () => getPool(client, pool),
      patch: (patch) => pools.patch(pool, patch, { type: "merge" }),
      plan,
    });
    if (!done.ok) {
      console.error(`kubectl bootc: ${done.message}`);
      return ExitCode.Refused;
    }
    await out(done.message + "\n");
    return ExitCode.Ok;
  };
  try {
    switch (cmd.command) {
      case "status": {
        const [{ poolViews, renderFrame }, { statusExitCode }] = await Promise.all([
          import("./status_view.ts"),
          import("./health.ts"),
        ]);
        if (cmd.watch || cmd.timeoutMs !== undefined) {
          const { watchStatus } = await import("./watch.ts");
          const stop = new AbortController();
          const onSignal = () => stop.abort();
          Deno.addSignalListener("SIGINT", onSignal);
          Deno.addSignalListener("SIGTERM", onSignal);
          const waiting = cmd.timeoutMs !== undefined;
          const codeOf = (views: readonly PoolView[]) =>
            statusExitCode(views.map((v) => v.health), true);
          let views: PoolView[];
          try {
            views = await watchStatus({
              read: () => readSnapshot(client, cmd.pool),
              write: out,
              isTerminal,
              style,
              columns,
              pool: cmd.pool,
              intervalMs: cmd.intervalMs,
              signal: waiting
                ? AbortSignal.any([stop.signal, AbortSignal.timeout(cmd.timeoutMs!)])
                : stop.signal,
              until: waiting
                ? (views) => views.length > 0 && codeOf(views) !== ExitCode.NotDone
                : undefined,
            });
          } finally {
            Deno.removeSignalListener("SIGINT", onSignal);
            Deno.removeSignalListener("SIGTERM", onSignal);
          }
          if (!waiting) return ExitCode.Ok;
          if (cmd.pool !== undefined && views.length === 0) {
            throw new NotFoundError("BootcNodePool", cmd.pool);
          }
          const code = views.length > 0 ? codeOf(views) : ExitCode.NotDone;
          if (code === ExitCode.NotDone) {
            const left = views.filter((v) => v.health !== "healthy").map((v) => v.name);
            console.error(
              `kubectl bootc: ${
                stop.signal.aborted ? "stopped" : `timed out after ${cmd.timeoutMs! / 1000}s`
              } waiting for ` +
                (left.length > 0 ? `${left.join(", ")} (still progressing)` : "a pool"),
            );
          }
          return code;
        }
        const snapshot = await readSnapshot(client, cmd.pool);
        const views = poolViews(snapshot, cmd.pool);
        if (cmd.pool !== undefined && views.length === 0) {
          throw new NotFoundError("BootcNodePool", cmd.pool);
        }
        const frame = cmd.output === "json"
          ? JSON.stringify(views, null, 2) + "\n"
          : renderFrame(views, {
            style,
            width: isTerminal ? columns() : Infinity,
            now: snapshot.now,
            only: cmd.pool,
          });
        await out(frame);
        return statusExitCode(views.map((v) => v.health), cmd.strict);
      }
      case "why": {
        const { explainNode, renderWhy } = await import("./why.ts");
        const input = await readWhyInput(client, cmd.node);
        if (!input.node && !input.bootcNode) throw new NotFoundError("Node", cmd.node);
        await out(renderWhy(explainNode(input), style, input.now));
        return ExitCode.Ok;
      }
      case "pause":
      case "resume": {
        const { pauseMessage, pausePatch } = await import("./actions.ts");
        const before = await getPool(client, cmd.pool);
        const paused = cmd.command === "pause";
        if ((before.spec?.rollout?.paused ?? false) !== paused) {
          await resources(client).pools.patch(cmd.pool, pausePatch(paused), { type: "merge" });
        }
        await out(pauseMessage(before, paused) + "\n");
        return ExitCode.Ok;
      }
      case "rollback": {
        const { planRollback } = await import("./actions.ts");
        return await steer(cmd.pool, (p) => planRollback(p, cmd.toRevision));
      }
      case "abort": {
        const { planAbort } = await import("./abort_retry.ts");
        return await steer(cmd.pool, planAbort);
      }
      case "retry": {
        const { planRetry } = await import("./abort_retry.ts");
        return await steer(cmd.pool, (p) => planRetry(p, new Date()));
      }
      case "approve": {
        const { planApprove } = await import("./approve.ts");
        return await steer(cmd.pool, (p) => planApprove(p, cmd.revision));
      }
      case "history": {
        const { historyMessage } = await import("./actions.ts");
        await out(historyMessage(await getPool(client, cmd.pool)) + "\n");
        return ExitCode.Ok;
      }
    }
  } finally {
    client.close();
  }
}

if (import.meta.main) {
  let code: number;
  try {
    const { flags, command } = parseCommandLine(Deno.args);
    code = await run(flags, command);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`kubectl bootc: ${e.message}\nRun 'kubectl bootc --help' for usage.`);
      code = ExitCode.Usage;
    } else if (e instanceof NotFoundError) {
      console.error(`kubectl bootc: ${e.message}`);
      code = ExitCode.NotFound;
    } else {
      const { errorText } = await import("./format.ts");
      console.error(`kubectl bootc: ${errorText(e)}`);
      code = ExitCode.Failed;
    }
  }
  Deno.exit(code);
}
