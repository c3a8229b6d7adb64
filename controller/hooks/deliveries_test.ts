import assert from "node:assert/strict";
import type { BootcNodePool, HookDeliveryStatus, HookPhase, HookSpec } from "../../lib/api/mod.ts";
import { startHookReceiver, testServerTls } from "../../tests/harness/hook_receiver.ts";
import { pool as poolFixture } from "../testing/fixtures.ts";
import type { PostJsonOptions, WebhookEndpoint, WebhookReply } from "../webhook/client.ts";
import type { CloudEvent } from "./cloud_event.ts";
import { HookDeliveries, type HookDeliveriesOptions } from "./deliveries.ts";
import type { HookOccurrence } from "./phases.ts";

function occurrence(phase: HookPhase, node?: string): HookOccurrence {
  return {
    id: ["workers", "r1", node ?? "", phase].join("/"),
    phase,
    pool: "workers",
    ...(node ? { node } : {}),
    revision: 1,
    target: { image: "quay.io/x/os@sha256:bb", digest: "sha256:bb" },
    time: "2026-03-01T10:00:00Z",
  };
}

function poolWith(hooks: HookSpec[]): BootcNodePool {
  const p = poolFixture();
  return { ...p, spec: { ...p.spec, hooks } };
}

interface Sent {
  endpoint: WebhookEndpoint;
  event: CloudEvent;
  options: PostJsonOptions;
}

/** A queue whose `send` answers with `answer(call)`; resolves `settled` per finished delivery. */
function harness(
  answer: (sent: Sent, n: number) => Promise<WebhookReply> | WebhookReply,
  extra: Partial<HookDeliveriesOptions> = {},
) {
  const sent: Sent[] = [];
  const settled: { pool: string; status: HookDeliveryStatus }[] = [];
  const waiters: (() => void)[] = [];
  const deliveries = new HookDeliveries({
    secretData: () => Promise.resolve(undefined),
    send: (endpoint, body, options) => {
      const s = { endpoint, event: body as CloudEvent, options };
      sent.push(s);
      return Promise.resolve(answer(s, sent.length));
    },
    onSettled: (pool, status) => {
      settled.push({ pool, status });
      waiters.splice(0).forEach((w) => w());
    },
    retry: { initialMs: 1, maxMs: 5 },
    ...extra,
  });
  const until = async (n: number) => {
    while (settled.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { deliveries, sent, settled, until };
}

Deno.test("deliveries go out per hook in planned order, filtered by phase, once per id", async () => {
  const h = harness(() => ({ status: 200, body: "" }));
  const pool = poolWith([
    { name: "all", url: "http://all" },
    { name: "pre", url: "http://pre", phases: ["NodePreDrain"] },
  ]);
  const list = [
    occurrence("NodePreDrain", "n1"),
    occurrence("NodePreReboot", "n1"),
    occurrence("NodePostVerification", "n1"),
  ];
  h.deliveries.enqueue(pool, list);
  h.deliveries.enqueue(pool, list); // planned again: nothing new
  await h.until(4);
  await h.deliveries.close();
  const to = (url: string) => h.sent.filter((s) => s.endpoint.url === url);
  assert.deepEqual(to("http://all").map((s) => s.event.data.phase), [
    "NodePreDrain",
    "NodePreReboot",
    "NodePostVerification",
  ]);
  assert.deepEqual(to("http://pre").map((s) => s.event.type), ["dev.bootc.node.preDrain"]);
  assert.equal(h.sent[0].options.headers?.["content-type"], "application/cloudevents+json");
  assert.equal(h.sent[0].endpoint.timeoutSeconds, 10);
  const results = h.deliveries.results("workers");
  assert.equal(results?.get("all")?.phase, "NodePostVerification");
  assert.equal(results?.get("all")?.result, "Delivered");
  assert.equal(results?.get("pre")?.phase, "NodePreDrain");
});

Deno.test("a failing attempt is retried until it succeeds; an event keeps its id", async () => {
  const h = harness((_s, n) => n < 3 ? { status: 503, body: "busy" } : { status: 202, body: "" });
  h.deliveries.enqueue(poolWith([{ name: "h", url: "http://h" }]), [occurrence("RolloutStarted")]);
  await h.until(1);
  await h.deliveries.close();
  assert.equal(h.sent.length, 3);
  assert.equal(new Set(h.sent.map((s) => s.event.id)).size, 1);
  const { status } = h.settled[0];
  assert.deepEqual(
    { result: status.result, attempts: status.attempts, message: status.message },
    { result: "Delivered", attempts: 3, message: "HTTP 202" },
  );
});

Deno.test("a refusal (4xx) fails at once; errors fail after maxAttempts", async () => {
  const h = harness((s) => {
    if (s.endpoint.url === "http://refuse") return { status: 403, body: "not today" };
    throw new TypeError("connection refused");
  });
  h.deliveries.enqueue(
    poolWith([
      { name: "refuse", url: "http://refuse" },
      { name: "down", url: "http://down", maxAttempts: 3 },
    ]),
    [occurrence("RolloutStarted")],
  );
  await h.until(2);
  await h.deliveries.close();
  const byName = new Map(h.settled.map((s) => [s.status.name, s.status]));
  assert.equal(byName.get("refuse")?.result, "Failed");
  assert.equal(byName.get("refuse")?.attempts, 1);
  assert.equal(byName.get("refuse")?.message, "refused: HTTP 403: not today");
  assert.equal(byName.get("down")?.result, "Failed");
  assert.equal(byName.get("down")?.attempts, 3);
  assert.equal(byName.get("down")?.message, "connection refused");
  assert.equal(h.sent.filter((s) => s.endpoint.url === "http://down").length, 3);
});

Deno.test("credentials come from the Secret at each attempt; a missing Secret fails the attempt", async () => {
  const store: { secret?: Record<string, string> } = {};
  const h = harness(() => ({ status: 200, body: "" }), {
    secretData: (name) => Promise.resolve(name === "creds" ? store.secret : undefined),
  });
  const pool = poolWith([{
    name: "h",
    url: "https://h",
    caBundle: "SPEC-CA",
    secretRef: { name: "creds" },
    maxAttempts: 2,
  }]);
  h.deliveries.enqueue(pool, [occurrence("RolloutStarted")]);
  await h.until(1);
  assert.equal(h.settled[0].status.result, "Failed");
  assert.equal(h.settled[0].status.message, "Secret creds not found");
  assert.equal(h.sent.length, 0);
  store.secret = { token: btoa("tok"), "ca.crt": btoa("SECRET-CA") };
  h.deliveries.enqueue(pool, [occurrence("RolloutCompleted")]);
  await h.until(2);
  await h.deliveries.close();
  assert.equal(h.sent[0].endpoint.bearerToken, "tok");
  assert.equal(h.sent[0].endpoint.caBundle, "SPEC-CA\nSECRET-CA");
  assert.equal(JSON.stringify(h.sent[0].event).includes("tok"), false);
});

Deno.test("close aborts a running delivery and drops those waiting, recording nothing", async () => {
  const h = harness((s) =>
    new Promise((_resolve, reject) => {
      const abort = () => reject(new DOMException("", "AbortError"));
      if (s.options.signal?.aborted) abort();
      s.options.signal?.addEventListener("abort", abort);
    })
  );
  h.deliveries.enqueue(poolWith([{ name: "h", url: "http://h" }]), [
    occurrence("NodePreDrain", "n1"),
    occurrence("NodePreReboot", "n1"),
  ]);
  assert.equal(h.deliveries.pending, 2);
  await new Promise((r) => setTimeout(r, 10)); // the first attempt is under way
  assert.equal(h.sent.length, 1);
  await h.deliveries.close();
  assert.equal(h.sent.length, 1);
  assert.equal(h.settled.length, 0);
  assert.equal(h.deliveries.pending, 0);
  h.deliveries.enqueue(poolWith([{ name: "h", url: "http://h" }]), [occurrence("RolloutStarted")]);
  assert.equal(h.deliveries.pending, 0);
});

Deno.test("more deliveries than a lane holds fail at once, named", async () => {
  let release = () => {};
  const gate = new Promise<void>((r) => release = r);
  const h = harness(async () => {
    await gate;
    return { status: 200, body: "" };
  }, { maxQueued: 1 });
  h.deliveries.enqueue(poolWith([{ name: "h", url: "http://h" }]), [
    occurrence("NodePreDrain", "n1"),
    occurrence("NodePreReboot", "n1"),
    occurrence("NodePostVerification", "n1"),
  ]);
  await h.until(1);
  assert.equal(h.settled[0].status.phase, "NodePostVerification");
  assert.match(h.settled[0].status.message ?? "", /not sent: 1 deliveries already wait/);
  release();
  await h.until(3);
  await h.deliveries.close();
});

Deno.test("deliveries reach a real receiver with the CloudEvents content type and bearer token", async () => {
  // Credentials go over TLS only.
  const tls = await testServerTls();
  const receiver = startHookReceiver({
    tls: { cert: tls.cert, key: tls.key },
    responder: (c) => c.attempt === 1 ? { status: 500 } : { status: 200 },
  });
  const settled: HookDeliveryStatus[] = [];
  const deliveries = new HookDeliveries({
    secretData: () => Promise.resolve({ token: btoa("s3cret") }),
    onSettled: (_p, s) => settled.push(s),
    retry: { initialMs: 1, maxMs: 5 },
  });
  try {
    deliveries.enqueue(
      poolWith([{
        name: "h",
        url: `${receiver.url}/hook`,
        caBundle: tls.ca,
        secretRef: { name: "creds" },
      }]),
      [occurrence("NodePreDrain", "n1")],
    );
    const calls = await receiver.waitFor(() => true, {
      until: (c) => c.length >= 2,
      timeoutMs: 10_000,
    });
    assert.equal(calls[1].headers["content-type"], "application/cloudevents+json");
    assert.equal(calls[1].headers.authorization, "Bearer s3cret");
    assert.equal(calls[1].attempt, 2);
    assert.equal((calls[1].json as CloudEvent).type, "dev.bootc.node.preDrain");
    while (settled.length === 0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(settled[0].result, "Delivered");
    assert.equal(settled[0].attempts, 2);
  } finally {
    await deliveries.close();
    await receiver.close();
  }
});
