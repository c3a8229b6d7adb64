/** The webhook Secret reader against a stand-in API: found, missing, refused, failing. */
import assert from "node:assert/strict";
import { LABEL_WEBHOOK_CREDENTIALS } from "../../lib/api/constants.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { fakeTransport, jsonResponse, statusResponse } from "../../lib/kube/testing.ts";
import { webhookSecretReader } from "./webhook_secrets.ts";

const NS = "bootc-operator";

Deno.test("webhookSecretReader: an opted-in Secret's data; missing: undefined; else named errors", async () => {
  const secret = (name: string, labels: Record<string, string>, type = "Opaque") => ({
    apiVersion: "v1",
    kind: "Secret",
    type,
    metadata: { name, namespace: NS, labels },
    data: { token: btoa("t") },
  });
  const optIn = { [LABEL_WEBHOOK_CREDENTIALS]: "true" };
  const objects: Record<string, unknown> = {
    ok: secret("ok", optIn),
    plain: secret("plain", {}),
    sa: secret("sa", optIn, "kubernetes.io/service-account-token"),
  };
  const transport = fakeTransport((req) => {
    const name = req.path.split("/").pop() ?? "";
    assert.ok(req.path.startsWith(`/api/v1/namespaces/${NS}/secrets/`), req.path);
    if (name === "forbidden") return statusResponse(403, "Forbidden", "secrets is forbidden");
    return objects[name] ? jsonResponse(objects[name]) : statusResponse(404, "NotFound");
  });
  const read = webhookSecretReader(new KubeClient({ transport }), NS);
  assert.deepEqual(await read("ok"), { token: btoa("t") });
  assert.equal(await read("missing"), undefined);
  await assert.rejects(
    read("plain"),
    /Secret plain lacks the label bootc\.dev\/webhook-credentials/,
  );
  await assert.rejects(read("sa"), /Secret sa is a service-account token/);
  await assert.rejects(read("forbidden"), /Secret forbidden: .*forbidden/);
});
