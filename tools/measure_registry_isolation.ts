/**
 * Measures how much a registry that never answers delays an unrelated pool.
 * One stack (real control plane, registry, controller and daemons, simulated
 * hosts) and a TCP listener that accepts connections and never answers. Pool b
 * (3 nodes, digest-pinned, maxUnavailable 1) rolls out back and forth:
 *
 * 1. alone;
 * 2. with one pool (a) whose tag lives on the hanging registry;
 * 3. with two such pools (a and c), as many as the controller has workers.
 *
 * and the time from the spec change to convergence is printed for each, plus
 * how often the controller connected to the hanging registry.
 *
 *   deno run --allow-all tools/measure_registry_isolation.ts [rounds=1]
 */
import { startHangingRegistry } from "../tests/harness/hanging_registry.ts";
import { startStack } from "../tests/harness/stack.ts";
import { waitFor } from "../tests/harness/wait.ts";
import { addNodes, patchPoolSpec, poolSpec, waitConverged } from "../tests/e2e/scenario.ts";

const rounds = Number(Deno.args[0] ?? 1);
const ROLLOUT_LIMIT_MS = 600_000;

const hanging = startHangingRegistry();
const stack = await startStack({
  limits: { a: { maxUnavailable: 1 }, b: { maxUnavailable: 1 }, c: { maxUnavailable: 1 } },
  controllerArgs: ["--insecure-registry", hanging.host],
});
const rows: { phase: string; seconds: number[] }[] = [];
let ok = false;
try {
  const { v1, v2, repository } = stack.images;
  await addNodes(stack, "b", 3);
  await addNodes(stack, "a", 1);
  await addNodes(stack, "c", 1);
  await stack.createPool("b", poolSpec("b", `${repository}@${v1.digest}`));
  await waitConverged(stack, "b", v1.digest, 3);
  let current = v1;

  const rolloutOfB = async (): Promise<number> => {
    const next = current === v1 ? v2 : v1;
    const started = Date.now();
    await patchPoolSpec(stack, "b", { image: { ref: `${repository}@${next.digest}` } });
    await waitConverged(stack, "b", next.digest, 3, ROLLOUT_LIMIT_MS);
    current = next;
    return (Date.now() - started) / 1000;
  };
  const phase = async (name: string) => {
    const seconds: number[] = [];
    for (let i = 0; i < rounds; i++) seconds.push(await rolloutOfB());
    rows.push({ phase: name, seconds });
    console.error(`${name}: ${seconds.map((s) => s.toFixed(1)).join(", ")} s`);
  };

  await phase("pool b alone");
  const hangingRef = `${hanging.host}/bootc/os:latest`;
  await stack.createPool("a", poolSpec("a", hangingRef));
  await waitFor(() => hanging.accepted > 0, { timeoutMs: 60_000, message: "a reached it" });
  await phase("with pool a on a hanging registry");
  await stack.createPool("c", poolSpec("c", `${hanging.host}/bootc/other:latest`));
  await phase("with pools a and c on a hanging registry");
  ok = true;
} finally {
  await stack.stop({ keepLogs: !ok });
  await hanging.stop();
  if (!ok) console.error(`logs kept in ${stack.logDir}`);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(`pool b rollout (3 nodes, maxUnavailable 1), ${rounds} round(s) per phase:`);
for (const r of rows) {
  console.log(
    `  ${r.phase.padEnd(44)} ${mean(r.seconds).toFixed(1).padStart(6)} s` +
      (r.seconds.length > 1 ? `  (${r.seconds.map((s) => s.toFixed(1)).join(", ")})` : ""),
  );
}
console.log(`connections accepted by the hanging registry: ${hanging.accepted}`);
