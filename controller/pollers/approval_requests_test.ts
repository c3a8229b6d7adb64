import assert from "node:assert/strict";
import type { ApprovalAsks } from "../model/approval.ts";
import type { WebhookEndpoint, WebhookReply } from "../webhook/client.ts";
import {
  approvalBody,
  ApprovalRequests,
  failureText,
  interpretReply,
  replyMessage,
} from "./approval_requests.ts";

const URL = "https://approve.example/bootc";

Deno.test("interpretReply: 2xx approves, 4xx refuses with the body's message, else retry", () => {
  assert.deepEqual(interpretReply({ status: 200, body: "" }), {
    ok: true,
    verdict: "Approved",
    message: "HTTP 200",
  });
  assert.deepEqual(interpretReply({ status: 403, body: '{"message":"CHG-1 not approved"}' }), {
    ok: true,
    verdict: "Refused",
    message: "CHG-1 not approved",
  });
  assert.equal(
    interpretReply({ status: 409, body: "freeze\nuntil Monday" }).message,
    "freeze until Monday",
  );
  assert.throws(() => interpretReply({ status: 503, body: "down" }), /HTTP 503: down/);
  // Timeout and rate limit: try again later, as the hooks do; never a refusal.
  assert.throws(() => interpretReply({ status: 429, body: "slow down" }), /HTTP 429: slow down/);
  assert.throws(() => interpretReply({ status: 408, body: "" }), /HTTP 408/);
  assert.throws(() => interpretReply({ status: 302, body: "" }), /HTTP 302/);
  assert.equal(replyMessage('{"reason":"nope"}'), "nope");
  assert.equal(replyMessage("x".repeat(300)).length, 256);
  assert.equal(
    failureText(new TypeError("error sending request for url (https://a/): connection refused")),
    "connection refused",
  );
});

Deno.test("approvalBody: pool, scope, revision, image, node, attempt", () => {
  assert.deepEqual(approvalBody("p", { revision: 3, image: "img", node: "n1" }, "Node", 2), {
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "ApprovalRequest",
    pool: "p",
    scope: "Node",
    revision: 3,
    image: "img",
    node: "n1",
    attempt: 2,
  });
});

/** Resolves once `check` holds (polling every 5 ms, at most 5 s). */
async function until(check: () => boolean): Promise<void> {
  const end = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("ApprovalRequests: retries errors, then keeps the verdict and asks no more", async () => {
  const replies: (WebhookReply | Error)[] = [
    new Error("connection refused"),
    { status: 500, body: "oops" },
    { status: 200, body: "{}" },
  ];
  const seen: { endpoint: WebhookEndpoint; body: unknown }[] = [];
  const woken: string[] = [];
  const said: (string | undefined)[] = [];
  const since: string[] = [];
  const requests: ApprovalRequests = new ApprovalRequests({
    initialBackoffMs: 5,
    maxBackoffMs: 10,
    jitter: 0,
    post: (endpoint, body) => {
      seen.push({ endpoint, body });
      const next = replies.shift()!;
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
    onResult: (pool) => {
      woken.push(pool);
      // What each outcome showed (a retry may follow within milliseconds).
      said.push(requests.answers(pool)[0]?.message);
      const failingSince = requests.answers(pool)[0]?.failingSince;
      if (failingSince) since.push(failingSince);
    },
  });
  const asks: ApprovalAsks = {
    webhook: { url: URL },
    scope: "Pool",
    asks: [{ revision: 3, image: "img" }],
  };
  try {
    requests.wantOnly("p", asks);
    await until(() => requests.answers("p")[0]?.verdict === "Approved");
    assert.deepEqual(said.slice(0, 2), [
      "attempt 1 failed: connection refused",
      "attempt 2 failed: HTTP 500: oops",
    ]);
    // A pending ask says since when it fails (the first failure), for the planner's bound.
    assert.equal(new Set(since).size, 1);
    assert.ok(since[0] && Date.parse(since[0]) <= Date.now());
    assert.equal(seen.length, 3);
    assert.equal(seen[0].endpoint.timeoutSeconds, 10);
    assert.deepEqual((seen[2].body as { attempt: number }).attempt, 3);
    assert.ok(woken.length >= 3 && woken.every((p) => p === "p"));
    // Decided: wanting it again asks nothing more.
    requests.wantOnly("p", asks);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(seen.length, 3);
    // No longer wanted: dropped.
    requests.wantOnly("p", undefined);
    assert.deepEqual(requests.keys, []);
    assert.deepEqual(requests.answers("p"), []);
    // Closed (leadership lost), then wanted again (a new term): asked again.
    requests.wantOnly("p", asks);
    await requests.close();
    replies.push({ status: 200, body: "" });
    requests.wantOnly("p", { ...asks, asks: [{ revision: 4, image: "img" }] });
    await until(() => requests.answers("p")[0]?.verdict === "Approved");
  } finally {
    await requests.close();
  }
});

Deno.test("ApprovalRequests: a Secret's token is sent; a missing Secret is a retried failure", async () => {
  const seen: WebhookEndpoint[] = [];
  let secrets = 0;
  const requests = new ApprovalRequests({
    initialBackoffMs: 5,
    maxBackoffMs: 10,
    jitter: 0,
    secretData: (name) => {
      secrets++;
      if (secrets === 1) return Promise.reject(new Error(`secrets "${name}" not found`));
      return Promise.resolve({ token: btoa("s3cret") });
    },
    post: (endpoint) => {
      seen.push(endpoint);
      return Promise.resolve({ status: 403, body: "no" });
    },
  });
  try {
    requests.wantOnly("p", {
      webhook: { url: URL, secretRef: { name: "hook" }, timeoutSeconds: 3 },
      scope: "Node",
      asks: [{ revision: 1, image: "img", node: "n1" }],
    });
    await until(() => requests.answers("p")[0]?.verdict === "Refused");
    assert.equal(seen.length, 1);
    assert.equal(seen[0].bearerToken, "s3cret");
    assert.equal(seen[0].timeoutSeconds, 3);
    assert.equal(requests.answers("p")[0].node, "n1");
  } finally {
    await requests.close();
  }
});

Deno.test("ApprovalRequests: a 429 is retried, not a refusal", async () => {
  const replies: WebhookReply[] = [{ status: 429, body: "rate limited" }, {
    status: 200,
    body: "",
  }];
  const requests = new ApprovalRequests({
    initialBackoffMs: 5,
    maxBackoffMs: 10,
    jitter: 0,
    post: () => Promise.resolve(replies.shift()!),
  });
  try {
    requests.wantOnly("p", {
      webhook: { url: URL },
      scope: "Pool",
      asks: [{ revision: 1, image: "img" }],
    });
    await until(() => requests.answers("p")[0]?.verdict !== undefined);
    assert.equal(requests.answers("p")[0].verdict, "Approved");
    assert.equal(requests.attempts, 2);
  } finally {
    await requests.close();
  }
});

Deno.test("ApprovalRequests: at most maxInFlightPerPool asks of a pool at once", async () => {
  let inFlight = 0;
  let most = 0;
  let secrets = 0;
  const release: (() => void)[] = [];
  const requests = new ApprovalRequests({
    maxInFlightPerPool: 3,
    secretData: () => {
      secrets++;
      return Promise.resolve({ token: btoa("t") });
    },
    post: () => {
      most = Math.max(most, ++inFlight);
      return new Promise((resolve) =>
        release.push(() => {
          inFlight--;
          resolve({ status: 200, body: "" });
        })
      );
    },
  });
  const asks = (count: number): ApprovalAsks => ({
    webhook: { url: URL, secretRef: { name: "hook" } },
    scope: "Node",
    asks: Array.from({ length: count }, (_, i) => ({ revision: 1, image: "img", node: `n${i}` })),
  });
  try {
    requests.wantOnly("p", asks(20));
    requests.wantOnly("q", asks(2));
    await until(() => inFlight === 5);
    await new Promise((r) => setTimeout(r, 20));
    // Three of p (one Secret read each), both of q: the other 17 of p wait their turn.
    assert.equal(inFlight, 5);
    assert.equal(secrets, 5);
    while (requests.answers("p").filter((a) => a.verdict).length < 20) {
      release.shift()?.();
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(most, 5);
    assert.equal(requests.attempts, 22);
  } finally {
    for (const r of release) r();
    await requests.close();
  }
});
