import assert from "node:assert/strict";
import { Registry } from "./metrics.ts";
import { handleRequest, parseListenAddress, startServer } from "./server.ts";

Deno.test("handleRequest: metrics, healthz, readyz and 404", async () => {
  const metrics = new Registry();
  metrics.counter("x_total", "X.").inc();
  let ready = false;
  const probes = { metrics, ready: () => ready };
  const get = (p: string) => handleRequest(new Request(`http://h${p}`), probes);
  assert.match(await get("/metrics").text(), /x_total 1/);
  assert.equal(get("/healthz").status, 200);
  assert.equal(get("/readyz").status, 503);
  ready = true;
  assert.equal(get("/readyz").status, 200);
  assert.equal(get("/nope").status, 404);
});

Deno.test("parseListenAddress", () => {
  assert.deepEqual(parseListenAddress(":8080"), { hostname: "0.0.0.0", port: 8080 });
  assert.deepEqual(parseListenAddress("127.0.0.1:0"), { hostname: "127.0.0.1", port: 0 });
  assert.deepEqual(parseListenAddress("[::1]:9"), { hostname: "::1", port: 9 });
  assert.throws(() => parseListenAddress("8080"), /invalid listen address/);
});

Deno.test("startServer serves over HTTP and stops on abort", async () => {
  const ac = new AbortController();
  const metrics = new Registry();
  metrics.gauge("g", "G.").set({}, 2);
  const server = startServer({
    addr: "127.0.0.1:0",
    signal: ac.signal,
    metrics,
    ready: () => true,
  });
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/metrics`);
    assert.match(res.headers.get("content-type") ?? "", /text\/plain; version=0.0.4/);
    assert.match(await res.text(), /^g 2$/m);
  } finally {
    ac.abort();
    await server.finished;
  }
});
