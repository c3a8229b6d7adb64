import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import { KeyedPoll, type KeyedPollOptions, pollKey } from "./keyed_poll.ts";

interface Hit {
  ok: true;
  n: number;
}

/** Lets every ready promise callback run. */
async function settle() {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

/** An engine whose schedule is "every `Sub` ms after the last outcome, at once at first". */
function setup(options: Partial<KeyedPollOptions<number, Hit>> = {}) {
  const clock = new FakeClock();
  const targets: string[] = [];
  const signals: AbortSignal[] = [];
  let fail = false;
  let hang = false;
  const woken: string[][] = [];
  const poll = new KeyedPoll<number, Hit>({
    attempt: (target, { signal }) => {
      targets.push(target);
      signals.push(signal);
      if (hang) {
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason), { once: true })
        );
      }
      return fail ? Promise.reject(new Error("refused")) : Promise.resolve({ ok: true, n: 1 });
    },
    nextAt: (s) => {
      if (s.settledAt === undefined) return -Infinity;
      const every = Math.min(...s.subscriptions.values());
      return s.settledAt + (s.latest?.result.ok ? every : Math.min(s.retryDelayMs, every));
    },
    sameSchedule: Object.is,
    timeoutMessage: (host, target, timeout) => `${host} did not answer for ${target} in ${timeout}`,
    log: { component: "test", field: "target", recovered: "again", failed: "failed" },
    timeoutMs: 5_000,
    initialBackoffMs: 1_000,
    maxBackoffMs: 8_000,
    jitter: 0,
    clock,
    onResult: (subs) => woken.push([...subs].sort()),
    ...options,
  });
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  const set = (o: { fail?: boolean; hang?: boolean }) => {
    fail = o.fail ?? fail;
    hang = o.hang ?? hang;
  };
  return { poll, targets, signals, woken, advance, set };
}

const T = "reg.example:5000/os:latest";
const want = (key = pollKey(T), schedule = 60_000) => ({ key, target: T, schedule });

Deno.test("KeyedPoll: one attempt per key for every subscriber; the soonest schedule wins", async () => {
  const { poll, targets, woken, advance } = setup();
  try {
    poll.want("a", want(pollKey(T), 60_000));
    poll.want("b", want(pollKey(T), 60_000));
    await settle();
    assert.equal(targets.length, 1);
    assert.deepEqual(woken, [["a", "b"]]);
    assert.deepEqual(poll.latest("a")?.result, { ok: true, n: 1 });
    // b asks every 10 s now: the key re-plans its sleep and tries at 10 s, not 60 s.
    poll.want("b", want(pollKey(T), 10_000));
    await advance(10_000);
    assert.equal(targets.length, 2);
    assert.equal(poll.attempts, 2);
  } finally {
    await poll.close();
  }
});

Deno.test("KeyedPoll: a failure backs off and names the host; an overrun attempt is aborted", async () => {
  const { poll, targets, signals, advance, set } = setup();
  try {
    set({ fail: true });
    poll.want("a", want());
    await settle();
    assert.deepEqual(poll.latest("a")?.result, {
      ok: false,
      message: "registry reg.example:5000: refused",
    });
    await advance(999);
    assert.equal(targets.length, 1, "no retry before the backoff");
    set({ fail: false, hang: true });
    await advance(1);
    assert.equal(targets.length, 2);
    assert.equal(poll.inFlight, 1);
    await advance(5_000);
    assert.equal(signals[1].aborted, true, "the hanging attempt is aborted");
    assert.equal(poll.inFlight, 0);
    assert.deepEqual(poll.latest("a")?.result, {
      ok: false,
      message: `reg.example:5000 did not answer for ${T} in 5s`,
    });
  } finally {
    await poll.close();
  }
});

Deno.test("KeyedPoll: a key nobody wants is dropped and its attempt aborted; close leaves nothing", async () => {
  const { poll, signals, set } = setup();
  set({ hang: true });
  poll.want("a", want(pollKey(T, { hash: "h1" })));
  await settle();
  assert.deepEqual(poll.keys, [pollKey(T, { hash: "h1" })]);
  // a moves to other credentials: the old key goes, its attempt is aborted.
  poll.want("a", want(pollKey(T, { hash: "h2" })));
  await settle();
  assert.equal(signals[0].aborted, true);
  assert.deepEqual(poll.keys, [pollKey(T, { hash: "h2" })]);
  poll.forget("a");
  assert.deepEqual(poll.keys, []);
  await poll.close();
  assert.ok(signals.every((s) => s.aborted));
  assert.equal(poll.want("b", want()), undefined, "closed: nothing starts");
  assert.deepEqual(poll.keys, []);
});

Deno.test("KeyedPoll: at most `max` keys of a group attempt at once; the rest wait in turn", async () => {
  const { poll, targets, advance, set } = setup({
    concurrency: { group: (key) => key.split("#")[0], max: 2 },
  });
  set({ hang: true });
  try {
    for (const k of ["g#1", "g#2", "g#3", "g#4", "h#1"]) poll.want(k, want(k));
    await settle();
    // Two of g and the one of h: g#3 and g#4 wait.
    assert.equal(targets.length, 3);
    assert.equal(poll.inFlight, 3);
    // A waiting key dropped never attempts; one in flight dropped hands its place on.
    await advance(3_000);
    poll.forget("g#4");
    poll.forget("g#1");
    await settle();
    assert.equal(targets.length, 4);
    assert.equal(poll.inFlight, 3);
    // Waiting did not eat into the timeout: g#3 started late and times out late.
    await advance(2_000);
    assert.equal(poll.latest("g#2")?.result.ok, false);
    assert.equal(poll.latest("g#3"), undefined);
    await advance(3_000);
    assert.equal(poll.latest("g#3")?.result.ok, false);
  } finally {
    await poll.close();
  }
});
