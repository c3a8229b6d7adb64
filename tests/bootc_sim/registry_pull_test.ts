import assert from "node:assert/strict";
import { RegistryError } from "../../lib/registry/mod.ts";
import { describeRegistryError, normalizeTimestamp } from "./registry_pull.ts";

Deno.test("timestamps are normalized to UTC the way chrono serializes them", () => {
  assert.equal(normalizeTimestamp("2026-01-01T00:00:00Z"), "2026-01-01T00:00:00Z");
  assert.equal(normalizeTimestamp("2023-10-14T19:22:15.42Z"), "2023-10-14T19:22:15.420Z");
  assert.equal(normalizeTimestamp("2024-05-01T12:00:00.000000000+02:00"), "2024-05-01T10:00:00Z");
  assert.equal(
    normalizeTimestamp("2024-05-01T12:00:00.1234567Z"),
    "2024-05-01T12:00:00.123456700Z",
  );
  assert.equal(normalizeTimestamp("yesterday"), null);
  assert.equal(normalizeTimestamp(undefined), null);
});

Deno.test("registry failures read like containers/image errors", () => {
  const ctx = { reference: "v9", where: "127.0.0.1:5000/os" };
  assert.equal(
    describeRegistryError(
      new RegistryError("NotFound", "x", { status: 404, code: "MANIFEST_UNKNOWN" }),
      ctx,
    ),
    "reading manifest v9 in 127.0.0.1:5000/os: manifest unknown: manifest unknown",
  );
  assert.equal(
    describeRegistryError(new RegistryError("Unauthorized", "x", { status: 401 }), ctx),
    "reading manifest v9 in 127.0.0.1:5000/os: unauthorized: authentication required",
  );
  assert.match(
    describeRegistryError(
      new RegistryError("Unreachable", "connection refused", { registry: "127.0.0.1:5000" }),
      ctx,
    ),
    /^pinging container registry 127\.0\.0\.1:5000: connection refused$/,
  );
});
