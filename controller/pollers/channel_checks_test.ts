import assert from "node:assert/strict";
import { FakeClock } from "../../lib/clock.ts";
import { RegistryError } from "../../lib/registry/mod.ts";
import { startRegistry } from "../../tests/harness/registry.ts";
import {
  ChannelChecks,
  type ChannelChecksOptions,
  channelKey,
  type ChannelOutcome,
  nextListingAt,
  registryTagLister,
  repositoryProblem,
  type TagLister,
} from "./channel_checks.ts";
import { MAX_WAIT_MS } from "./keyed_poll.ts";

const REPO = "reg.example:5000/bootc/os";
const HOUR = 60 * 60_000;

interface Call {
  repository: string;
  dockerConfigJson?: string;
  signal: AbortSignal;
  settled: boolean;
  answer(tags: string[]): void;
  fail(e: Error): void;
}

/** A lister whose calls wait until the test answers them (or their signal aborts). */
function scriptedLister() {
  const calls: Call[] = [];
  const lister: TagLister = (repository, options) => {
    const { promise, resolve, reject } = Promise.withResolvers<string[]>();
    const call: Call = {
      repository,
      dockerConfigJson: options.dockerConfigJson,
      signal: options.signal,
      settled: false,
      answer: (tags) => {
        call.settled = true;
        resolve(tags);
      },
      fail: (e) => {
        call.settled = true;
        reject(e);
      },
    };
    options.signal.addEventListener("abort", () => call.fail(options.signal.reason), {
      once: true,
    });
    calls.push(call);
    return promise;
  };
  return { calls, lister, pending: () => calls.filter((c) => !c.settled) };
}

/** Lets every ready promise callback run. */
async function settle() {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

function setup(options: Partial<ChannelChecksOptions> = {}) {
  const clock = new FakeClock();
  const sleeps: number[] = [];
  const recording = {
    now: () => clock.now(),
    sleep: (ms: number, signal?: AbortSignal) => {
      sleeps.push(ms);
      return clock.sleep(ms, signal);
    },
  };
  const { calls, lister, pending } = scriptedLister();
  const woken: string[][] = [];
  const service = new ChannelChecks({
    lister,
    clock: recording,
    timeoutMs: 30_000,
    initialBackoffMs: 1_000,
    maxBackoffMs: 8_000,
    jitter: 0.5,
    random: () => 0,
    onResult: (pools) => woken.push([...pools].sort()),
    ...options,
  });
  const at = (ms: number) => new Date(clock.now().getTime() + ms);
  const advance = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { clock, calls, pending, woken, service, at, advance, sleeps };
}

Deno.test("pools sharing a repository and credentials share one listing; outcomes wake them all", async () => {
  const { calls, woken, service, clock } = setup();
  try {
    assert.equal(service.want("a", { repository: REPO, dueAt: clock.now() }), undefined);
    assert.equal(service.want("b", { repository: REPO, dueAt: clock.now() }), undefined);
    await settle();
    assert.equal(calls.length, 1);
    assert.equal(service.inFlight, 1);
    assert.equal(service.latest("a"), undefined, "nothing to show while in flight");

    calls[0].answer(["1.0.0", "1.0.1", "latest"]);
    await settle();
    assert.deepEqual(woken, [["a", "b"]]);
    const expected: ChannelOutcome = {
      at: clock.now(),
      result: { ok: true, tags: ["1.0.0", "1.0.1", "latest"] },
    };
    assert.deepEqual(service.want("b", { repository: REPO, dueAt: clock.now() }), expected);
    assert.deepEqual(service.latest("a"), expected);
    assert.equal(service.inFlight, 0);
    assert.equal(calls.length, 1);
  } finally {
    await service.close();
  }
});

Deno.test("different credentials are different keys, and the config is passed along", async () => {
  const { calls, service, clock } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: clock.now() });
    service.want("b", {
      repository: REPO,
      dueAt: clock.now(),
      credentials: { hash: "sha256:1", dockerConfigJson: '{"auths":{}}' },
    });
    await settle();
    assert.equal(calls.length, 2);
    assert.deepEqual(calls.map((c) => c.dockerConfigJson), [undefined, '{"auths":{}}']);
    assert.equal(service.keys.length, 2);
    assert.notEqual(
      channelKey({ repository: REPO }),
      channelKey({ repository: REPO, credentials: { hash: "sha256:1" } }),
    );
  } finally {
    await service.close();
  }
});

Deno.test("a pool lists when its check is due, once per due time", async () => {
  const { calls, woken, service, at, advance } = setup();
  try {
    const due = at(2 * HOUR);
    service.want("a", { repository: REPO, dueAt: due });
    await advance(2 * HOUR - 1);
    assert.equal(calls.length, 0, "not before the due time");
    await advance(1);
    assert.equal(calls.length, 1);
    calls[0].answer(["1.0.0"]);
    await settle();
    assert.equal(woken.length, 1);

    // Reconciled again and again with the same due time: no second listing.
    for (let i = 0; i < 5; i++) {
      assert.equal(service.want("a", { repository: REPO, dueAt: due })?.result.ok, true);
      await advance(HOUR);
    }
    assert.equal(calls.length, 1);

    // The next due time (from the schedule) brings the next listing, at that time.
    const next = at(3 * HOUR);
    service.want("a", { repository: REPO, dueAt: next });
    await advance(3 * HOUR - 1);
    assert.equal(calls.length, 1);
    await advance(1);
    assert.equal(calls.length, 2);
    calls[1].answer(["1.0.0", "1.0.1"]);
    await settle();
    assert.deepEqual(service.latest("a")?.result, { ok: true, tags: ["1.0.0", "1.0.1"] });
    assert.equal(woken.length, 2);
  } finally {
    await service.close();
  }
});

Deno.test("a due time days away is waited for in steps of at most an hour", async () => {
  const { calls, service, at, advance, sleeps } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: at(30 * 24 * HOUR) }); // past a timer's range
    await settle();
    await advance(30 * 24 * HOUR - 1);
    assert.equal(calls.length, 0);
    await advance(1);
    assert.equal(calls.length, 1);
    const waits = sleeps.filter((ms) => ms !== 30_000); // the per-attempt timeout
    assert.equal(waits[0], MAX_WAIT_MS);
    assert.ok(waits.every((ms) => ms > 0 && ms <= MAX_WAIT_MS), `waits: ${waits}`);
  } finally {
    await service.close();
  }
});

Deno.test("a want with a sooner due time re-plans the wait", async () => {
  const { calls, service, at, advance } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: at(10 * HOUR) });
    await advance(1_000);
    service.want("a", { repository: REPO, dueAt: at(60_000) });
    await advance(59_999);
    assert.equal(calls.length, 0);
    await advance(1);
    assert.equal(calls.length, 1);
  } finally {
    await service.close();
  }
});

Deno.test("each pool's due time is met: a shared key lists for the later pool too", async () => {
  const { calls, woken, service, at, advance, clock } = setup();
  try {
    service.want("early", { repository: REPO, dueAt: at(HOUR) });
    service.want("late", { repository: REPO, dueAt: at(2 * HOUR) });
    await advance(HOUR);
    assert.equal(calls.length, 1);
    calls[0].answer(["1.0.0"]);
    await settle();
    assert.deepEqual(woken, [["early", "late"]]);
    // "early" has not told its next due time yet; "late" is still owed a listing.
    await advance(HOUR - 1);
    assert.equal(calls.length, 1);
    await advance(1);
    assert.equal(calls.length, 2);
    calls[1].answer(["1.0.0", "1.1.0"]);
    await settle();

    // A pool joining with a due time the last listing already met gets it without a listing…
    const seen = service.want("old", { repository: REPO, dueAt: at(-30 * 60_000) });
    assert.deepEqual(seen?.result, { ok: true, tags: ["1.0.0", "1.1.0"] });
    await advance(0);
    assert.equal(calls.length, 2);
    // …so is one whose due time is the very moment of the last listing…
    service.want("new", { repository: REPO, dueAt: clock.now() });
    await settle();
    assert.equal(calls.length, 2);
    // …and one whose due time came after it gets a fresh listing right away.
    await advance(1);
    service.want("new", { repository: REPO, dueAt: clock.now() });
    await settle();
    assert.equal(calls.length, 3);
  } finally {
    await service.close();
  }
});

Deno.test("forgetting the pool with the earliest due time re-plans to the next one", async () => {
  const { calls, service, at, advance } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: at(HOUR) });
    service.want("b", { repository: REPO, dueAt: at(3 * HOUR) });
    await advance(30 * 60_000);
    service.forget("a");
    await advance(2 * HOUR);
    assert.equal(calls.length, 0, "a's due time went with it");
    await advance(30 * 60_000);
    assert.equal(calls.length, 1);
  } finally {
    await service.close();
  }
});

Deno.test("failures retry with capped exponential backoff and jitter until a success", async () => {
  const { calls, woken, service, advance, clock } = setup({ random: () => 0.5 });
  try {
    const due = clock.now();
    service.want("a", { repository: REPO, dueAt: due });
    await settle();
    const failAll = async (n: number) => {
      calls[n].fail(new Error("registry reg.example:5000 failed HTTP 503"));
      await settle();
    };
    await failAll(0);
    assert.deepEqual(service.latest("a")?.result, {
      ok: false,
      message: "registry reg.example:5000 failed HTTP 503",
    });
    assert.deepEqual(service.want("a", { repository: REPO, dueAt: due })?.result.ok, false);
    // Base delays 1 s, 2 s, 4 s, 8 s, 8 s (capped), each stretched by 0.5 * 0.5.
    for (const [i, delay] of [1_250, 2_500, 5_000, 10_000, 10_000].entries()) {
      await advance(delay - 1);
      assert.equal(calls.length, i + 1, `retry ${i + 1} not before ${delay} ms`);
      await advance(1);
      assert.equal(calls.length, i + 2, `retry ${i + 1} after ${delay} ms`);
      if (i < 4) await failAll(i + 1);
    }
    calls[5].answer(["1.0.0"]);
    await settle();
    assert.equal(woken.length, 6, "every outcome, failed or not, wakes the pools");
    assert.deepEqual(service.latest("a")?.result, { ok: true, tags: ["1.0.0"] });
    // The due time is met: no more listings, however long.
    await advance(24 * HOUR);
    assert.equal(calls.length, 6);

    // A later failure starts the backoff from the beginning again.
    service.want("a", { repository: REPO, dueAt: clock.now() });
    await settle();
    await failAll(6);
    await advance(1_249);
    assert.equal(calls.length, 7);
    await advance(1);
    assert.equal(calls.length, 8);
  } finally {
    await service.close();
  }
});

Deno.test("a listing that overruns the timeout is aborted, recorded naming the host, and retried", async () => {
  const { calls, woken, service, advance, clock } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: clock.now() });
    await settle();
    const call = calls[0];
    await advance(29_999);
    assert.equal(call.signal.aborted, false);
    assert.deepEqual(woken, []);
    await advance(1);
    assert.equal(call.signal.aborted, true, "the hanging listing is aborted");
    assert.equal(call.settled, true);
    assert.equal(service.inFlight, 0);
    assert.deepEqual(woken, [["a"]]);
    assert.deepEqual(service.latest("a")?.result, {
      ok: false,
      message: `registry reg.example:5000 did not list the tags of ${REPO} within 30s`,
    });
    await advance(1_000);
    assert.equal(calls.length, 2, "retried after the backoff");
  } finally {
    await service.close();
  }
});

Deno.test("a key no pool wants is dropped and its listing aborted; nothing is recorded", async () => {
  const { calls, woken, service, advance, clock } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: clock.now() });
    service.want("b", { repository: REPO, dueAt: clock.now() });
    await settle();
    service.forget("a");
    assert.deepEqual(service.keys, [channelKey({ repository: REPO })]);
    assert.equal(calls[0].signal.aborted, false);
    service.forget("b");
    assert.deepEqual(service.keys, []);
    await settle();
    assert.equal(calls[0].signal.aborted, true);
    assert.equal(service.inFlight, 0);
    await advance(2 * HOUR);
    assert.deepEqual(woken, []);
    assert.equal(calls.length, 1);
    assert.equal(service.latest("a"), undefined);
  } finally {
    await service.close();
  }
});

Deno.test("a pool that changes repository moves to the new key; the old one is dropped", async () => {
  const { calls, service, clock } = setup();
  try {
    service.want("a", { repository: REPO, dueAt: clock.now() });
    await settle();
    calls[0].answer(["1.0.0"]);
    await settle();
    const other = "reg.example:5000/bootc/other";
    assert.equal(service.want("a", { repository: other, dueAt: clock.now() }), undefined);
    await settle();
    assert.deepEqual(service.keys, [channelKey({ repository: other })]);
    assert.equal(calls.length, 2);
    assert.equal(calls[1].repository, other);
  } finally {
    await service.close();
  }
});

Deno.test("forgetAll aborts every listing; close ends every loop and refuses new keys", async () => {
  const { calls, service, clock, at } = setup();
  service.want("a", { repository: REPO, dueAt: clock.now() });
  service.want("b", { repository: "other.example/os", dueAt: clock.now() });
  service.want("c", { repository: "third.example/os", dueAt: at(HOUR) }); // sleeping
  await settle();
  assert.equal(service.inFlight, 2);
  service.forgetAll();
  assert.deepEqual(service.keys, []);
  await settle();
  assert.ok(calls.every((c) => c.settled && c.signal.aborted));
  await service.close();
  assert.equal(service.inFlight, 0);
  assert.equal(service.want("d", { repository: REPO, dueAt: clock.now() }), undefined);
  assert.deepEqual(service.keys, []);
  await settle();
  assert.equal(calls.length, 2);
});

Deno.test("nextListingAt: the earliest unmet due time, not before the retry delay", () => {
  assert.equal(nextListingAt({ dueAts: [] }), Infinity);
  assert.equal(nextListingAt({ dueAts: [30, 10, 20] }), 10);
  assert.equal(nextListingAt({ dueAts: [30, 10, 20], succeededAt: 10 }), 20, "met at equal time");
  assert.equal(nextListingAt({ dueAts: [30, 10], succeededAt: 40 }), Infinity);
  assert.equal(nextListingAt({ dueAts: [NaN, 10], succeededAt: 5 }), 10, "invalid: never due");
  assert.equal(nextListingAt({ dueAts: [10], failedAt: 12, retryDelayMs: 5 }), 17);
  assert.equal(nextListingAt({ dueAts: [30], failedAt: 12, retryDelayMs: 5 }), 30);
  assert.equal(
    nextListingAt({ dueAts: [10], succeededAt: 11, failedAt: 12, retryDelayMs: 5 }),
    Infinity,
    "a failure after the due time was met owes nothing",
  );
});

Deno.test("repositoryProblem rejects tags and digests", () => {
  assert.equal(repositoryProblem("127.0.0.1:5000/bootc/os"), undefined);
  assert.equal(repositoryProblem("quay.io/org/os"), undefined);
  assert.equal(repositoryProblem("fedora"), undefined);
  assert.match(repositoryProblem("quay.io/org/os:1.0") ?? "", /without a tag or digest/);
  assert.match(repositoryProblem(`quay.io/org/os@sha256:${"a".repeat(64)}`) ?? "", /digest/);
});

Deno.test("registryTagLister: a tag in the repository and an aborted signal fail before any request", async () => {
  let requests = 0;
  const lister = registryTagLister({
    fetch: () => {
      requests++;
      return Promise.reject(new Error("no request expected"));
    },
  });
  await assert.rejects(
    lister("r.example/os:1.0", { signal: new AbortController().signal }),
    /channel repository "r.example\/os:1.0" must name a repository without a tag or digest/,
  );
  const aborted = new AbortController();
  aborted.abort(new Error("gone"));
  await assert.rejects(lister("r.example/os", { signal: aborted.signal }), /gone/);
  assert.equal(requests, 0);
});

/**
 * A reverse proxy in front of the real registry that pages `tags/list` the way
 * the distribution spec says (sorted, `n` and `last`, a `Link` to the next page):
 * registry 2.8, the test registry, ignores `n` on tags. Every request goes
 * through to the registry with its Authorization header, so the registry (and its
 * token service) still decides who may list.
 */
function startPagingProxy(upstream: string) {
  const pages: { n: string | null; last: string | null; status: number }[] = [];
  const client = Deno.createHttpClient({});
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const headers = new Headers();
      const authorization = request.headers.get("authorization");
      if (authorization) headers.set("authorization", authorization);
      const answer = await fetch(new URL(url.pathname, upstream), { headers, client });
      const body = await answer.arrayBuffer();
      const n = url.searchParams.get("n");
      const last = url.searchParams.get("last");
      if (!answer.ok || !url.pathname.endsWith("/tags/list")) {
        pages.push({ n, last, status: answer.status });
        return new Response(body, { status: answer.status, headers: answer.headers });
      }
      const list = JSON.parse(new TextDecoder().decode(body)) as { name: string; tags: string[] };
      const rest = list.tags.sort().filter((t) => last === null || t > last);
      const size = n === null ? rest.length : Number(n);
      const page = rest.slice(0, size);
      pages.push({ n, last, status: 200 });
      const next: Record<string, string> = rest.length > page.length
        ? { link: `<${url.pathname}?n=${size}&last=${page.at(-1)}>; rel="next"` }
        : {};
      return Response.json({ name: list.name, tags: page }, { headers: next });
    },
  );
  return {
    host: `127.0.0.1:${server.addr.port}`,
    pages,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      client.close();
    },
  };
}

Deno.test("against the real registry: paginated, authenticated with the pool's dockerconfigjson", async (t) => {
  await using registry = await startRegistry({ auth: "token", users: { bob: "hunter2" } });
  const host = registry.host;
  const versions = ["1.0.0", "1.0.1", "1.1.0", "2.0.0", "v2.1.0", "latest", "sha-abc123"];
  const pushed = await registry.pushImage({ repository: "bootc/os", tag: "0.9.0", version: "0.9" });
  for (const tag of versions) await registry.tagExisting("bootc/os", pushed.digest, tag);
  const all = ["0.9.0", ...versions].sort();
  const issuer = registry.tokenIssuer!;

  await t.step("through pages of 3, logging in once with the pull secret", async () => {
    await using proxy = startPagingProxy(registry.url);
    const list = registryTagLister({ insecureRegistries: [proxy.host], pageSize: 3 });
    const before = issuer.requests.length;
    const dockerConfigJson = JSON.stringify({
      auths: { [proxy.host]: { auth: btoa("bob:hunter2") } },
    });
    const tags = await list(`${proxy.host}/bootc/os`, {
      dockerConfigJson,
      signal: new AbortController().signal,
    });
    assert.deepEqual(tags, all, "every tag, in page order");
    // The first request is challenged by the registry, then three authorized pages.
    assert.deepEqual(proxy.pages, [
      { n: "3", last: null, status: 401 },
      { n: "3", last: null, status: 200 },
      { n: "3", last: all[2], status: 200 },
      { n: "3", last: all[5], status: 200 },
    ]);
    assert.deepEqual(issuer.requests.slice(before), [
      { user: "bob", scopes: ["repository:bootc/os:pull"], status: 200 },
    ]);
  });

  await t.step(
    "a ChannelChecks on the real lister records the tags and wakes the pool",
    async () => {
      const woken = Promise.withResolvers<string[]>();
      const checks = new ChannelChecks({
        lister: registryTagLister(registry.clientOptions()),
        timeoutMs: 60_000,
        onResult: (pools) => woken.resolve(pools),
      });
      try {
        const request = {
          repository: `${host}/bootc/os`,
          credentials: { hash: "sha256:bob", dockerConfigJson: registry.dockerConfigJson("bob") },
          dueAt: new Date(),
        };
        assert.equal(checks.want("pool-a", request), undefined);
        assert.deepEqual(await woken.promise, ["pool-a"]);
        const outcome = checks.want("pool-a", request);
        assert.ok(outcome?.result.ok, JSON.stringify(outcome));
        assert.deepEqual([...outcome.result.tags].sort(), all);
      } finally {
        await checks.close();
      }
    },
  );

  await t.step("without credentials the outcome is a failure naming the registry", async () => {
    const woken = Promise.withResolvers<void>();
    const checks = new ChannelChecks({
      lister: registryTagLister(registry.clientOptions()),
      timeoutMs: 60_000,
      onResult: () => woken.resolve(),
    });
    try {
      checks.want("pool-b", { repository: `${host}/bootc/os`, dueAt: new Date() });
      await woken.promise;
      const outcome = checks.latest("pool-b");
      assert.equal(outcome?.result.ok, false);
      assert.match(
        outcome.result.ok ? "" : outcome.result.message,
        new RegExp(`^unauthorized: registry ${host.replaceAll(".", "\\.")} requires credentials`),
      );
    } finally {
      await checks.close();
    }
  });

  await t.step("wrong credentials are a RegistryError from the lister", async () => {
    const list = registryTagLister(registry.clientOptions());
    await assert.rejects(
      list(`${host}/bootc/os`, {
        dockerConfigJson: registry.dockerConfigJson("bob", "wrong"),
        signal: new AbortController().signal,
      }),
      (e: unknown) => e instanceof RegistryError && e.kind === "Unauthorized",
    );
  });
});
