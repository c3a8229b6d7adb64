import assert from "node:assert/strict";
import { startHookReceiver } from "./hook_receiver.ts";
import { issueCa, issueLeaf } from "./pki.ts";

async function post(url: string, body: unknown, init: RequestInit = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer t" },
    body: JSON.stringify(body),
    ...init,
  });
  return { status: res.status, text: await res.text() };
}

Deno.test("hook receiver records calls with headers, body, time and attempt per id", async () => {
  const r = startHookReceiver();
  try {
    const before = Date.now();
    assert.deepEqual(await post(`${r.url}/a`, { id: "e1", x: 1 }), { status: 200, text: "" });
    await post(`${r.url}/a`, { id: "e1", x: 1 });
    await post(`${r.url}/b?q=1`, { id: "e2" });
    await post(`${r.url}/c`, "not an object");
    assert.equal(r.calls.length, 4);
    const [first, second, third, fourth] = r.calls;
    assert.equal(first.path, "/a");
    assert.equal(first.headers.authorization, "Bearer t");
    assert.deepEqual(first.json, { id: "e1", x: 1 });
    assert.ok(first.at.getTime() >= before);
    assert.deepEqual([first.attempt, second.attempt, third.attempt], [1, 2, 1]);
    assert.equal(third.path, "/b?q=1");
    assert.equal(fourth.key, "POST /c");
    assert.deepEqual(r.received((c) => c.key === "e1").map((c) => c.seq), [1, 2]);
  } finally {
    await r.close();
  }
});

Deno.test("hook receiver answers through the responder: fail, refuse, then succeed", async () => {
  const r = startHookReceiver({
    responder: (c) =>
      c.path === "/refuse"
        ? { status: 403, body: { message: "no" } }
        : c.attempt < 3
        ? { status: 503, body: "busy" }
        : { status: 200, body: "ok" },
  });
  try {
    assert.deepEqual(await post(`${r.url}/x`, { id: "k" }), { status: 503, text: "busy" });
    assert.deepEqual(await post(`${r.url}/x`, { id: "k" }), { status: 503, text: "busy" });
    assert.deepEqual(await post(`${r.url}/x`, { id: "k" }), { status: 200, text: "ok" });
    assert.deepEqual(await post(`${r.url}/refuse`, {}), {
      status: 403,
      text: JSON.stringify({ message: "no" }),
    });
    r.setResponder(() => ({ status: 202 }));
    assert.equal((await post(`${r.url}/x`, { id: "k" })).status, 202);
  } finally {
    await r.close();
  }
});

Deno.test("hook receiver answers slowly, and closing ends a delayed answer", async () => {
  const r = startHookReceiver({ responder: () => ({ delayMs: 300, body: "late" }) });
  try {
    const started = Date.now();
    assert.equal((await post(r.url, {})).text, "late");
    assert.ok(Date.now() - started >= 250);
    r.setResponder(() => ({ delayMs: 60_000 }));
    await assert.rejects(() => post(r.url, {}, { signal: AbortSignal.timeout(200) }));
  } finally {
    await r.close();
  }
});

Deno.test("hook receiver waitFor resolves on matching calls and times out naming what it saw", async () => {
  const r = startHookReceiver();
  try {
    const waiting = r.waitFor((c) => c.path === "/b", { until: (c) => c.length >= 2 });
    await post(`${r.url}/a`, {});
    await post(`${r.url}/b`, {});
    await post(`${r.url}/b`, {});
    assert.equal((await waiting).length, 2);
    await assert.rejects(
      () => r.waitFor((c) => c.path === "/never", { timeoutMs: 50 }),
      /no matching calls.*\/a/,
    );
  } finally {
    await r.close();
  }
});

Deno.test("hook receiver serves HTTPS", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const ca = await issueCa({ dir, name: "ca", days: 1, profile: { commonName: "rcv-ca" } });
    const leaf = await issueLeaf({
      dir,
      name: "rcv",
      days: 1,
      ca,
      profile: { commonName: "rcv", extendedKeyUsage: ["serverAuth"], ips: ["127.0.0.1"] },
    });
    const r = startHookReceiver({
      tls: { cert: await Deno.readTextFile(leaf.cert), key: await Deno.readTextFile(leaf.key) },
    });
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(ca.cert)] });
    try {
      assert.ok(r.url.startsWith("https://"));
      assert.equal((await post(r.url, { id: "s" }, { client } as RequestInit)).status, 200);
      assert.equal(r.calls[0].key, "s");
    } finally {
      client.close();
      await r.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
