/**
 * `kubectl-bootc`: the operator's kubectl plugin. Put the executable on PATH and
 * run `kubectl bootc …` (kubectl finds plugins by their `kubectl-` name). See
 * plugin/README.md.
 *
 * Exit codes: 0 done; 1 the command failed (an API or kubeconfig error, a pool
 * or node that is not there, nothing to roll back to); 2 a usage error.
 *
 * @module
 */
import { type Command, type GlobalFlags, parseCommandLine, USAGE, UsageError } from "./cli.ts";

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

/** Runs one command; returns the exit code. */
async function run(flags: GlobalFlags, cmd: Command): Promise<number> {
  if (cmd.command === "help") {
    await out(USAGE + "\n");
    return 0;
  }
  const [{ connect, readSnapshot, readWhyInput, resources }, { colorEnabled, createStyle }] =
    await Promise.all([import("./kube.ts"), import("./style.ts")]);
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
  try {
    switch (cmd.command) {
      case "status": {
        const { poolViews, renderFrame } = await import("./status_view.ts");
        if (cmd.watch) {
          const { watchStatus } = await import("./watch.ts");
          const stop = new AbortController();
          const onSignal = () => stop.abort();
          Deno.addSignalListener("SIGINT", onSignal);
          Deno.addSignalListener("SIGTERM", onSignal);
          try {
            await watchStatus({
              read: () => readSnapshot(client, cmd.pool),
              write: out,
              isTerminal,
              style,
              columns,
              pool: cmd.pool,
              intervalMs: cmd.intervalMs,
              signal: stop.signal,
            });
          } finally {
            Deno.removeSignalListener("SIGINT", onSignal);
            Deno.removeSignalListener("SIGTERM", onSignal);
          }
          return 0;
        }
        const snapshot = await readSnapshot(client, cmd.pool);
        const views = poolViews(snapshot, cmd.pool);
        await out(renderFrame(views, {
          style,
          width: isTerminal ? columns() : Infinity,
          now: snapshot.now,
          only: cmd.pool,
        }));
        return cmd.pool !== undefined && views.length === 0 ? 1 : 0;
      }
      case "why": {
        const { explainNode, renderWhy } = await import("./why.ts");
        const input = await readWhyInput(client, cmd.node);
        await out(renderWhy(explainNode(input), style, input.now));
        return input.node || input.bootcNode ? 0 : 1;
      }
      case "pause":
      case "resume": {
        const { pauseMessage, pausePatch } = await import("./actions.ts");
        const pools = resources(client).pools;
        const before = await pools.get(cmd.pool);
        const paused = cmd.command === "pause";
        if ((before.spec?.rollout?.paused ?? false) !== paused) {
          await pools.patch(cmd.pool, pausePatch(paused), { type: "merge" });
        }
        await out(pauseMessage(before, paused) + "\n");
        return 0;
      }
      case "rollback": {
        const { rollback } = await import("./actions.ts");
        const pools = resources(client).pools;
        const done = await rollback({
          get: () => pools.get(cmd.pool),
          patch: (patch) => pools.patch(cmd.pool, patch, { type: "merge" }),
          toRevision: cmd.toRevision,
        });
        if (!done.ok) {
          console.error(`kubectl bootc: ${done.message}`);
          return 1;
        }
        await out(done.message + "\n");
        return 0;
      }
      case "history": {
        const { historyMessage } = await import("./actions.ts");
        await out(historyMessage(await resources(client).pools.get(cmd.pool)) + "\n");
        return 0;
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
      code = 2;
    } else {
      const { errorText } = await import("./format.ts");
      console.error(`kubectl bootc: ${errorText(e)}`);
      code = 1;
    }
  }
  Deno.exit(code);
}
