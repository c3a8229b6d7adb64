import assert from "node:assert/strict";
import { startHangingRegistry } from "../../tests/harness/hanging_registry.ts";
import { waitFor } from "../../tests/harness/wait.ts";
import { RegistryImageResolver } from "./resolver.ts";
import { TagResolution } from "./tag_resolution.ts";

Deno.test("RegistryImageResolver stops its request when the signal aborts", async () => {
  await using hanging = startHangingRegistry();
  const resolver = new RegistryImageResolver({ insecureRegistries: [hanging.host] });
  const ac = new AbortController();
  const started = performance.now();
  const resolving = resolver.resolve(`${hanging.host}/os:latest`, { signal: ac.signal });
  await waitFor(() => hanging.open > 0, { timeoutMs: 10_000, message: "request sent" });
  ac.abort(new DOMException("enough", "TimeoutError"));
  await assert.rejects(resolving);
  // Well before the registry client's own 30 s timeout.
  assert.ok(performance.now() - started < 10_000);
  await waitFor(() => hanging.open === 0, {
    timeoutMs: 10_000,
    message: "the connection should be closed, not leaked",
  });
});

Deno.test("an already aborted signal makes no request", async () => {
  await using hanging = startHangingRegistry();
  const resolver = new RegistryImageResolver({ insecureRegistries: [hanging.host] });
  await assert.rejects(
    resolver.resolve(`${hanging.host}/os:latest`, { signal: AbortSignal.abort() }),
  );
  assert.equal(hanging.accepted, 0);
});

Deno.test("TagResolution on a hanging registry: a timely failure naming the host", async () => {
  await using hanging = startHangingRegistry();
  const woken: string[] = [];
  const service = new TagResolution({
    resolver: new RegistryImageResolver({ insecureRegistries: [hanging.host] }),
    timeoutMs: 300,
    onResult: (pools) => woken.push(...pools),
  });
  try {
    service.want("a", { ref: `${hanging.host}/os:latest`, intervalMs: 60_000 });
    const outcome = await waitFor(() => service.latest("a"), {
      timeoutMs: 10_000,
      message: "a failure should be recorded",
    });
    assert.deepEqual(outcome.result, {
      ok: false,
      message: `registry ${hanging.host} did not answer within 300ms`,
    });
    assert.deepEqual(woken, ["a"]);
  } finally {
    await service.forgetAll();
  }
  await waitFor(() => hanging.open === 0, {
    timeoutMs: 10_000,
    message: "the timed-out request's connection should be closed",
  });
});
