import assert from "node:assert/strict";
import { classifyHttpError, classifyNetworkError, parseErrorBody } from "./errors.ts";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const base = {
  registry: "127.0.0.1:5000",
  repository: "os",
  usedCredentials: false,
  hasPullSecret: false,
};

Deno.test("registry error bodies are parsed; other bodies give nothing", () => {
  assert.deepEqual(
    parseErrorBody(
      enc({
        errors: [{ code: "MANIFEST_UNKNOWN", message: "manifest unknown", detail: { Tag: "v9" } }],
      }),
    ),
    [{ code: "MANIFEST_UNKNOWN", message: "manifest unknown", detail: { Tag: "v9" } }],
  );
  assert.deepEqual(parseErrorBody(new TextEncoder().encode("<html>")), []);
  assert.deepEqual(parseErrorBody(undefined), []);
});

Deno.test("404s: missing tag, digest, repository, blob", () => {
  const tag = classifyHttpError({
    ...base,
    status: 404,
    errors: [{ code: "MANIFEST_UNKNOWN", message: "manifest unknown" }],
    subject: { type: "manifest", tag: "v9" },
  });
  assert.equal(tag.kind, "NotFound");
  assert.equal(tag.message, 'manifest unknown: tag "v9" not found in 127.0.0.1:5000/os (HTTP 404)');
  assert.equal(tag.code, "MANIFEST_UNKNOWN");
  const digest = classifyHttpError({
    ...base,
    status: 404,
    errors: [],
    subject: { type: "manifest", digest: "sha256:ab" },
  });
  assert.equal(
    digest.message,
    "manifest unknown: digest sha256:ab not found in 127.0.0.1:5000/os (HTTP 404)",
  );
  const repo = classifyHttpError({
    ...base,
    status: 404,
    errors: [{ code: "NAME_UNKNOWN", message: "repository name not known to registry" }],
    subject: { type: "tags" },
  });
  assert.equal(
    repo.message,
    'repository unknown: repository "os" not found in 127.0.0.1:5000 (HTTP 404)',
  );
  const blob = classifyHttpError({
    ...base,
    status: 404,
    errors: [],
    subject: { type: "blob", digest: "sha256:cd" },
  });
  assert.equal(blob.kind, "NotFound");
  assert.match(blob.message, /^blob unknown: blob sha256:cd not found/);
});

Deno.test("401 with and without credentials; 403", () => {
  const rejected = classifyHttpError({
    ...base,
    usedCredentials: true,
    hasPullSecret: true,
    status: 401,
    errors: [],
    subject: { type: "manifest", tag: "v1" },
  });
  assert.equal(rejected.kind, "Unauthorized");
  assert.equal(
    rejected.message,
    "unauthorized: registry 127.0.0.1:5000 rejected the credentials from pull secret (HTTP 401); check the Secret",
  );
  const anonymous = classifyHttpError({
    ...base,
    status: 401,
    errors: [],
    subject: { type: "tags" },
  });
  assert.match(
    anonymous.message,
    /requires credentials for 127.0.0.1:5000\/os and no pull secret is configured/,
  );
  const noMatch = classifyHttpError({
    ...base,
    hasPullSecret: true,
    status: 401,
    errors: [],
    subject: { type: "tags" },
  });
  assert.match(noMatch.message, /the pull secret has no credentials for 127.0.0.1:5000/);
  const token = classifyHttpError({
    ...base,
    usedCredentials: true,
    hasPullSecret: true,
    status: 401,
    errors: [],
    subject: { type: "token", realm: "https://auth.example:8443/token" },
  });
  assert.match(
    token.message,
    /rejected the credentials from pull secret via its token service auth.example:8443/,
  );
  const denied = classifyHttpError({
    ...base,
    usedCredentials: true,
    status: 403,
    errors: [{ code: "DENIED", message: "requested access to the resource is denied" }],
    subject: { type: "manifest", tag: "v1" },
  });
  assert.equal(denied.kind, "Unauthorized");
  assert.match(
    denied.message,
    /^denied: .* credentials from pull secret .*: requested access to the resource is denied$/,
  );
});

Deno.test("429 and 5xx are transient (Unreachable); other 4xx are Protocol", () => {
  assert.equal(
    classifyHttpError({ ...base, status: 429, errors: [], subject: { type: "tags" } }).kind,
    "Unreachable",
  );
  const unavailable = classifyHttpError({
    ...base,
    status: 503,
    errors: [],
    subject: { type: "tags" },
  });
  assert.equal(unavailable.kind, "Unreachable");
  assert.match(unavailable.message, /HTTP 503/);
  assert.equal(
    classifyHttpError({ ...base, status: 400, errors: [], subject: { type: "tags" } }).kind,
    "Protocol",
  );
});

Deno.test("network errors name the cause", () => {
  const opts = { timedOut: false, timeoutMs: 10_000, insecure: false };
  const refused = classifyNetworkError(
    new TypeError(
      "error sending request for url (http://127.0.0.1:1/v2/): client error (Connect): tcp connect error: Connection refused (os error 111)",
    ),
    "127.0.0.1:1",
    opts,
  );
  assert.equal(refused.kind, "Unreachable");
  assert.equal(refused.message, "cannot reach registry 127.0.0.1:1: connection refused");
  const wrapped = classifyNetworkError(
    new TypeError("fetch failed", {
      cause: new Error(
        "error sending request for url (https://r.io/v2/): client error (Connect): received corrupt message of type InvalidContentType",
      ),
    }),
    "r.io",
    opts,
  );
  assert.match(
    wrapped.message,
    /^cannot reach registry r.io: TLS handshake failed .*list it as an insecure registry$/,
  );
  const timeout = classifyNetworkError(new DOMException("x", "TimeoutError"), "r.io", {
    ...opts,
    timedOut: true,
  });
  assert.equal(timeout.message, "cannot reach registry r.io: no answer within 10s");
  const cert = classifyNetworkError(
    new TypeError("invalid peer certificate: UnknownIssuer"),
    "r.io",
    opts,
  );
  assert.match(cert.message, /TLS certificate is not trusted .*private CA/);
  const dns = classifyNetworkError(
    new TypeError("dns error: failed to lookup address information"),
    "nx.io",
    opts,
  );
  assert.equal(dns.message, "cannot reach registry nx.io: the host name does not resolve");
});
