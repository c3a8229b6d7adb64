import assert from "node:assert/strict";
import { KubeClient } from "./client.ts";
import { RequestTimeoutError, startDeadline } from "./deadline.ts";
import { Resources } from "./resources.ts";
import type { Transport } from "./types.ts";
import { createTransport } from "./transport.ts";

/** A server that takes connections and never answers (a dead peer: no FIN, no RST). */
function silentServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) conns.push(conn);
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    connections: () => conns.length,
    async close() {
      listener.close();
      await accepting;
      for (const c of conns) c.close();
    },
  };
}

/** A transport over `server` that counts its resets. */
function countingTransport(server: string) {
  const inner = createTransport({ server, namespace: "default", source: "kubeconfig" });
  let resets = 0;
  const transport: Transport = {
    request: (req) => inner.request(req),
    close: () => inner.close(),
    reset: () => void resets++,
  };
  return { transport, resets: () => resets };
}

Deno.test("a request the API server never answers ends at its deadline and drops the connections", async () => {
  const server = silentServer();
  const { transport, resets } = countingTransport(server.url);
  const client = new KubeClient({ transport, requestTimeoutMs: 200 });
  try {
    const started = performance.now();
    const error = await client.resource(Resources.nodes).get("n1").then(() => undefined, (e) => e);
    assert.ok(error instanceof RequestTimeoutError, String(error));
    assert.match(
      error.message,
      /GET \/api\/v1\/nodes\/n1: no answer from the API server within 0.2 s/,
    );
    assert.ok(performance.now() - started < 5_000);
    assert.equal(resets(), 1);
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("a watch silent past its timeoutSeconds and grace ends with RequestTimeoutError", async () => {
  // Headers, then nothing: the server's side of the watch is gone, ours never hears of it.
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: ac.signal },
    () => new Response(new ReadableStream({ start() {} }), { status: 200 }),
  );
  const { transport, resets } = countingTransport(`http://127.0.0.1:${server.addr.port}`);
  const client = new KubeClient({ transport, watchGraceMs: 200 });
  try {
    const started = performance.now();
    const events: unknown[] = [];
    const error = await (async () => {
      for await (const ev of client.resource(Resources.nodes).watch({ timeoutSeconds: 1 })) {
        events.push(ev);
      }
    })().then(() => undefined, (e) => e);
    const took = performance.now() - started;
    assert.ok(error instanceof RequestTimeoutError, String(error));
    assert.match(error.message, /watch \/api\/v1\/nodes: no answer .* within 1.2 s/);
    assert.ok(took >= 1_100 && took < 10_000, `${took} ms`);
    assert.deepEqual(events, []);
    assert.equal(resets(), 1);
  } finally {
    client.close();
    ac.abort();
    await server.finished;
  }
});

Deno.test("the caller's abort ends a request as before: no timeout error, no reset", async () => {
  const server = silentServer();
  const { transport, resets } = countingTransport(server.url);
  const client = new KubeClient({ transport, requestTimeoutMs: 60_000 });
  try {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const error = await client.resource(Resources.nodes).get("n1", { signal: ac.signal }).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(!(error instanceof RequestTimeoutError), String(error));
    assert.equal(resets(), 0);
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("startDeadline: cleared in time, it never fires", async () => {
  let fired = 0;
  const d = startDeadline({ ms: 30, what: "x", onExpire: () => fired++ });
  d.clear();
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(d.expired, false);
  assert.equal(d.signal.aborted, false);
  assert.equal(fired, 0);
});
