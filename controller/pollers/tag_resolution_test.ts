import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import type { ImageResolver, ResolvedTarget, ResolveOptions } from "./resolver.ts";
import { failureMessage, registryHost, retryDelayMs } from "./keyed_poll.ts";
import {
  nextResolutionAt,
  tagKey,
  TagResolution,
  type TagResolutionOptions,
} from "./tag_resolution.ts";

const REF = "reg.example:5000/os:latest";
const DIGEST = `sha256:${"a".repeat(64)}`;
const DIGEST2 = `sha256:${"b".repeat(64)}`;

interface Call {
  ref: string;
  options: ResolveOptions;
  settled: boolean;
  answer(r: ResolvedTarget): void;
  fail(e: Error): void;
}

/** A resolver whose calls wait until the test answers them (or their signal aborts). */
class ScriptedResolver implements ImageResolver {
  calls: Call[] = [];

  resolve(ref: string, options: ResolveOptions): Promise<ResolvedTarget> {
    const { promise, resolve, reject } = Promise.withResolvers<ResolvedTarget>();
    const call: Call = {
      ref,
      options,
      settled: false,
      answer: (r) => {
        call.settled = true;
        resolve(r);
      },
      fail: (e) => {
        call.settled = true;
        reject(e);
      },
    };
    options.signal?.addEventListener("abort", () => call.fail(options.signal!.reason), {
      once: true,
    });
    this.calls.push(call);
    return promise;
  }

  pending(): Call[] {
    return this.calls.filter((c) => !c.settled);
  }
}

/** Lets every ready promise callback run. */
async function settle() {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

function setup(options: Partial<TagResolutionOptions> = {}) {
  const clock = new FakeClock();
  const resolver = new ScriptedResolver();
  const woken: string[][] = [];
  const service = new TagResolution({
    resolver,
    clock,
    timeoutMs: 10_000,
    initialBackoffMs: 1_000,
    maxBackoffMs: 60_000,
    jitter: 0.5,
    random: () => 0,
    onResult: (subscribers) => woken.push(subscribers.sort()),
    ...options,
  });
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { clock, resolver, woken, service, advance };
}

Deno.test("pools sharing a tag and credentials share one request; results wake them all", async () => {
  const { resolver, woken, service } = setup();
  try {
    assert.equal(service.want("a", { ref: REF, intervalMs: 60_000 }), undefined);
    assert.equal(service.want("b", { ref: REF, intervalMs: 60_000 }), undefined);
    await settle();
    assert.equal(resolver.calls.length, 1);
    assert.equal(service.inFlight, 1);
    // Still in flight: nobody has a result, so nobody is shown as failed.
    assert.equal(service.latest("a"), undefined);

    resolver.calls[0].answer({ digest: DIGEST });
    await settle();
    assert.deepEqual(woken, [["a", "b"]]);
    assert.deepEqual(service.latest("a")?.result, { ok: true, digest: DIGEST });
    assert.deepEqual(service.want("b", { ref: REF, intervalMs: 60_000 })?.result, {
      ok: true,
      digest: DIGEST,
    });
    assert.equal(service.inFlight, 0);
    assert.equal(resolver.calls.length, 1);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("different credentials are different keys, and the config is passed along", async () => {
  const { resolver, service } = setup();
  try {
    service.want("a", { ref: REF, intervalMs: 60_000 });
    service.want("b", {
      ref: REF,
      intervalMs: 60_000,
      credentials: { hash: "sha256:1", dockerConfigJson: '{"auths":{}}' },
    });
    await settle();
    assert.equal(resolver.calls.length, 2);
    assert.deepEqual(resolver.calls.map((c) => c.options.dockerConfigJson), [
      undefined,
      '{"auths":{}}',
    ]);
    assert.equal(service.keys.length, 2);
    assert.notEqual(tagKey({ ref: REF }), tagKey({ ref: REF, credentials: { hash: "sha256:1" } }));
  } finally {
    await service.forgetAll();
  }
});

Deno.test("a request that overruns the timeout is aborted and recorded naming the host", async () => {
  const { resolver, woken, service, advance } = setup();
  try {
    service.want("a", { ref: REF, intervalMs: 60_000 });
    await settle();
    const call = resolver.calls[0];
    await advance(9_999);
    assert.equal(call.options.signal?.aborted, false);
    assert.deepEqual(woken, []);
    await advance(1);
    assert.equal(call.options.signal?.aborted, true, "the hanging request is aborted");
    assert.equal(call.settled, true);
    assert.equal(service.inFlight, 0);
    assert.deepEqual(woken, [["a"]]);
    assert.deepEqual(service.latest("a")?.result, {
      ok: false,
      message: "registry reg.example:5000 did not answer within 10s",
    });
  } finally {
    await service.forgetAll();
  }
});

Deno.test("failures back off exponentially (with jitter), successes poll at the interval", async () => {
  const { resolver, woken, service, advance } = setup({ random: () => 0.5 });
  try {
    service.want("a", { ref: REF, intervalMs: 30_000 });
    await settle();
    resolver.calls[0].fail(new Error("registry reg.example:5000 failed HTTP 503"));
    await settle();
    assert.equal(woken.length, 1);
    // First retry: 1 s stretched by 0.5 * 0.5 = 1.25 s.
    await advance(1_249);
    assert.equal(resolver.calls.length, 1);
    await advance(1);
    assert.equal(resolver.calls.length, 2);
    resolver.calls[1].fail(new Error("registry reg.example:5000 failed HTTP 503"));
    await settle();
    // Second retry: 2 s * 1.25.
    await advance(2_499);
    assert.equal(resolver.calls.length, 2);
    await advance(1);
    assert.equal(resolver.calls.length, 3);
    resolver.calls[2].answer({ digest: DIGEST });
    await settle();
    assert.deepEqual(service.latest("a")?.result, { ok: true, digest: DIGEST });
    // Healthy again: the next poll comes after the interval, and a moved tag shows up.
    await advance(29_999);
    assert.equal(resolver.calls.length, 3);
    await advance(1);
    assert.equal(resolver.calls.length, 4);
    resolver.calls[3].answer({ digest: DIGEST2 });
    await settle();
    assert.deepEqual(service.latest("a")?.result, { ok: true, digest: DIGEST2 });
    assert.equal(woken.length, 4);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("retry delays stay within their jitter bounds and the cap", () => {
  const options = { initialMs: 1_000, maxMs: 60_000, jitter: 0.2 };
  for (let n = 1; n <= 12; n++) {
    const base = Math.min(60_000, 1_000 * 2 ** (n - 1));
    const low = retryDelayMs(n, options, () => 0);
    const high = retryDelayMs(n, options, () => 0.999999);
    assert.equal(low, base);
    assert.ok(high <= base * 1.2 && high > base * 1.19, `attempt ${n}: ${high}`);
    for (let i = 0; i < 20; i++) {
      const d = retryDelayMs(n, options);
      assert.ok(d >= base && d <= base * 1.2, `attempt ${n}: ${d}`);
    }
  }
});

Deno.test("retries never wait longer than the poll interval", async () => {
  const { resolver, service, advance } = setup({ initialBackoffMs: 60_000 });
  try {
    service.want("a", { ref: REF, intervalMs: 2_000 });
    await settle();
    resolver.calls[0].fail(new Error("boom"));
    await settle();
    await advance(2_000);
    assert.equal(resolver.calls.length, 2);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("a key shared by pools polls at the shortest interval", async () => {
  const { resolver, service, advance } = setup();
  try {
    service.want("slow", { ref: REF, intervalMs: 60_000 });
    await settle();
    resolver.calls[0].answer({ digest: DIGEST });
    await settle();
    service.want("fast", { ref: REF, intervalMs: 5_000 });
    await advance(5_000);
    assert.equal(resolver.calls.length, 2);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("notBefore delays a key's first attempt unless another pool wants it now", async () => {
  const { clock, resolver, service, advance } = setup();
  try {
    service.want("a", {
      ref: REF,
      intervalMs: 60_000,
      notBefore: new Date(clock.now().getTime() + 20_000),
    });
    await advance(19_999);
    assert.equal(resolver.calls.length, 0);
    await advance(1);
    assert.equal(resolver.calls.length, 1);

    const other = "reg.example:5000/os:v2";
    service.want("b", {
      ref: other,
      intervalMs: 60_000,
      notBefore: new Date(clock.now().getTime() + 20_000),
    });
    await settle();
    service.want("c", { ref: other, intervalMs: 60_000 });
    await settle();
    assert.equal(resolver.calls.length, 2);
    assert.equal(resolver.calls[1].ref, other);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("a key no pool wants is dropped and its request aborted", async () => {
  const { resolver, woken, service, advance } = setup();
  try {
    service.want("a", { ref: REF, intervalMs: 60_000 });
    service.want("b", { ref: REF, intervalMs: 60_000 });
    await settle();
    service.forget("a");
    assert.deepEqual(service.keys, [tagKey({ ref: REF })]);
    assert.equal(resolver.calls[0].options.signal?.aborted, false);
    service.forget("b");
    assert.deepEqual(service.keys, []);
    await settle();
    assert.equal(resolver.calls[0].options.signal?.aborted, true);
    assert.equal(service.inFlight, 0);
    // Nothing is recorded or woken for a key nobody wants, and it is not polled again.
    await advance(120_000);
    assert.deepEqual(woken, []);
    assert.equal(resolver.calls.length, 1);
    assert.equal(service.latest("a"), undefined);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("a pool that changes its tag moves to the new key; the old one is dropped", async () => {
  const { resolver, service } = setup();
  try {
    service.want("a", { ref: REF, intervalMs: 60_000 });
    await settle();
    resolver.calls[0].answer({ digest: DIGEST });
    await settle();
    const v2 = "reg.example:5000/os:v2";
    // Until the new tag resolves, the pool has no result for it (not the old tag's).
    assert.equal(service.want("a", { ref: v2, intervalMs: 60_000 }), undefined);
    await settle();
    assert.deepEqual(service.keys, [tagKey({ ref: v2 })]);
    assert.equal(resolver.calls.length, 2);
    assert.equal(resolver.calls[1].ref, v2);
  } finally {
    await service.forgetAll();
  }
});

Deno.test("forgetAll aborts every request and ends every loop", async () => {
  const { resolver, service } = setup();
  service.want("a", { ref: REF, intervalMs: 60_000 });
  service.want("b", { ref: "other.example/os:1", intervalMs: 60_000 });
  await settle();
  assert.equal(service.inFlight, 2);
  await service.forgetAll();
  assert.ok(resolver.calls.every((c) => c.settled && c.options.signal?.aborted));
  assert.deepEqual(service.keys, []);
  assert.equal(service.inFlight, 0);
});

Deno.test("messages name the registry host", () => {
  assert.equal(registryHost(REF), "reg.example:5000");
  assert.equal(registryHost("fedora:40"), "registry-1.docker.io");
  assert.equal(
    failureMessage(new Error("manifest unknown"), "reg.example:5000"),
    "registry reg.example:5000: manifest unknown",
  );
  assert.equal(
    failureMessage(
      new Error("cannot reach registry reg.example:5000: connection refused"),
      "reg.example:5000",
    ),
    "cannot reach registry reg.example:5000: connection refused",
  );
});

Deno.test("nextResolutionAt: notBefore first, then the shortest interval, retries never later", () => {
  const subs = (...s: { intervalMs: number; notBefore?: number }[]) =>
    new Map(s.map((x, i) => [`p${i}`, x]));
  const ok = { at: new Date(0), result: { ok: true as const, digest: DIGEST } };
  const failed = { at: new Date(0), result: { ok: false as const, message: "down" } };
  // Never tried: at once, unless every pool says its resolution is still fresh.
  assert.equal(
    nextResolutionAt({ subscriptions: subs({ intervalMs: 60 }), retryDelayMs: 0 }),
    -Infinity,
  );
  assert.equal(
    nextResolutionAt({
      subscriptions: subs({ intervalMs: 60, notBefore: 500 }, { intervalMs: 90, notBefore: 300 }),
      retryDelayMs: 0,
    }),
    300,
  );
  assert.equal(
    nextResolutionAt({
      subscriptions: subs({ intervalMs: 60, notBefore: 500 }, { intervalMs: 90 }),
      retryDelayMs: 0,
    }),
    -Infinity,
  );
  // After a success: the shortest interval; after a failure: the retry delay, capped by it.
  const both = subs({ intervalMs: 60 }, { intervalMs: 90 });
  assert.equal(
    nextResolutionAt({ subscriptions: both, latest: ok, settledAt: 1_000, retryDelayMs: 0 }),
    1_060,
  );
  assert.equal(
    nextResolutionAt({ subscriptions: both, latest: failed, settledAt: 1_000, retryDelayMs: 20 }),
    1_020,
  );
  assert.equal(
    nextResolutionAt({ subscriptions: both, latest: failed, settledAt: 1_000, retryDelayMs: 500 }),
    1_060,
  );
});
