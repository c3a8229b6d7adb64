import assert from "node:assert/strict";
import {
  AlreadyExistsError,
  ConflictError,
  errorFromResponse,
  errorFromStatus,
  ForbiddenError,
  GoneError,
  InvalidError,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  isTooManyRequests,
  KubeError,
  NotFoundError,
  TooManyRequestsError,
  UnauthorizedError,
} from "./errors.ts";

function chunked(text: string, size: number, status: number, headers: HeadersInit = {}): Response {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (offset >= bytes.length) return c.close();
      c.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
  return new Response(body, { status, headers });
}

const status = (code: number, reason: string, details?: unknown) =>
  JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    code,
    reason,
    message: `m-${reason}`,
    details,
  });

Deno.test("errorFromResponse parses a Status body delivered in small chunks", async () => {
  const res = chunked(
    status(409, "AlreadyExists", { name: "x", kind: "pods" }),
    7,
    409,
  );
  const e = await errorFromResponse(res);
  assert.ok(e instanceof AlreadyExistsError);
  assert.ok(isAlreadyExists(e));
  assert.ok(!isConflict(e));
  assert.equal(e.status, 409);
  assert.equal(e.reason, "AlreadyExists");
  assert.equal(e.message, "m-AlreadyExists");
  assert.equal(e.details?.name, "x");
  assert.equal((e.body as { code: number }).code, 409);
  assert.equal(res.bodyUsed, true);
});

Deno.test("errorFromResponse maps status codes to subclasses", async () => {
  const cases: [number, string, new (...a: never[]) => KubeError][] = [
    [404, "NotFound", NotFoundError],
    [409, "Conflict", ConflictError],
    [410, "Expired", GoneError],
    [410, "Gone", GoneError],
    [403, "Forbidden", ForbiddenError],
    [401, "Unauthorized", UnauthorizedError],
    [422, "Invalid", InvalidError],
    [429, "TooManyRequests", TooManyRequestsError],
    [500, "InternalError", KubeError],
  ];
  for (const [code, reason, cls] of cases) {
    const e = await errorFromResponse(new Response(status(code, reason), { status: code }));
    assert.equal(e.constructor, cls, `${code} ${reason}`);
  }
  assert.ok(
    isNotFound(await errorFromResponse(new Response(status(404, "NotFound"), { status: 404 }))),
  );
  assert.ok(isGone(await errorFromResponse(new Response(status(410, "Expired"), { status: 410 }))));
});

Deno.test("422 Invalid exposes causes", async () => {
  const e = await errorFromResponse(
    new Response(
      status(422, "Invalid", {
        causes: [{ reason: "FieldValueRequired", field: "spec.image", message: "Required value" }],
      }),
      { status: 422 },
    ),
  );
  assert.ok(e instanceof InvalidError);
  assert.deepEqual(e.causes.map((c) => c.field), ["spec.image"]);
});

Deno.test("429 takes retryAfterSeconds from Retry-After, else from details", async () => {
  const a = await errorFromResponse(
    new Response(status(429, "TooManyRequests", { retryAfterSeconds: 3 }), {
      status: 429,
      headers: { "Retry-After": "7" },
    }),
  );
  assert.ok(isTooManyRequests(a));
  assert.equal(a.retryAfterSeconds, 7);
  const b = await errorFromResponse(
    new Response(status(429, "TooManyRequests", { retryAfterSeconds: 3 }), { status: 429 }),
  );
  assert.equal(b.retryAfterSeconds, 3);
});

Deno.test("a non-Status body still yields a useful error", async () => {
  const e = await errorFromResponse(chunked("upstream connect error", 5, 503));
  assert.equal(e.constructor, KubeError);
  assert.equal(e.status, 503);
  assert.match(e.message, /503: upstream connect error/);
  assert.equal(e.body, "upstream connect error");
});

Deno.test("errorFromStatus builds GoneError from a watch ERROR Status", () => {
  const e = errorFromStatus({
    kind: "Status",
    code: 410,
    reason: "Expired",
    message: "too old resource version",
  });
  assert.ok(e instanceof GoneError);
  assert.equal(e.status, 410);
  assert.equal(e.message, "too old resource version");
});
