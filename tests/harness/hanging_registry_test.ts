import assert from "node:assert/strict";
import { startHangingRegistry } from "./hanging_registry.ts";
import { waitFor } from "./wait.ts";

Deno.test("the hanging registry accepts a request and never answers", async () => {
  await using hanging = startHangingRegistry();
  const ac = new AbortController();
  const request = fetch(`http://${hanging.host}/v2/os/manifests/latest`, {
    method: "HEAD",
    signal: ac.signal,
  });
  await waitFor(() => hanging.open === 1, { timeoutMs: 10_000, message: "connection accepted" });
  // Still no answer a while later: the request is pending until the client gives up.
  const outcome = await Promise.race([
    request.then(() => "answered", () => "failed"),
    new Promise<string>((r) => setTimeout(() => r("pending"), 300)),
  ]);
  assert.equal(outcome, "pending");
  ac.abort();
  await assert.rejects(request, (e: Error) => e.name === "AbortError");
  assert.equal(hanging.accepted, 1);
});

Deno.test("stop() closes connections that are still waiting", async () => {
  const hanging = startHangingRegistry();
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(hanging.host.split(":")[1]),
  });
  await conn.write(new TextEncoder().encode("GET /v2/ HTTP/1.1\r\nhost: x\r\n\r\n"));
  await waitFor(() => hanging.open === 1, { timeoutMs: 10_000, message: "connection accepted" });
  await hanging.stop();
  assert.equal(hanging.open, 0);
  // The client sees the connection closed without an answer.
  assert.equal(await conn.read(new Uint8Array(64)), null);
  conn.close();
});
