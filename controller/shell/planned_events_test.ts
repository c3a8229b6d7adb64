import assert from "node:assert/strict";
import { ConflictError, type KubeObject } from "../../lib/kube/mod.ts";
import {
  ALL_STATUS_PARTS,
  PlannedEvents,
  withoutEventsAbout,
  writesFailedEvent,
} from "./planned_events.ts";
import { type PlannedEvent, poolEvent } from "../planner/plan.ts";
import { pool } from "../testing/fixtures.ts";

Deno.test("PlannedEvents: about the pool or a BootcNode; time-derived ones once", async () => {
  const recorded: { involved: KubeObject; reason: string }[] = [];
  const events = new PlannedEvents({
    record: (involved, _type, reason) => {
      recorded.push({ involved, reason });
      return Promise.resolve();
    },
  }, (name) => `uid-of-${name}`);
  const p = pool();
  const plan: PlannedEvent[] = [
    {
      regarding: { kind: "BootcNodePool", name: "workers" },
      type: "Normal",
      reason: "A",
      message: "",
    },
    { regarding: { kind: "BootcNode", name: "n1" }, type: "Warning", reason: "B", message: "" },
    {
      regarding: { kind: "BootcNode", name: "n1" },
      type: "Warning",
      reason: "Timeout",
      message: "",
      onceKey: "timeout/n1",
    },
  ];
  await events.record(p, plan);
  await events.record(p, plan);
  assert.deepEqual(recorded.map((r) => r.reason), ["A", "B", "Timeout", "A", "B"]);
  assert.equal(recorded[0].involved.metadata, p.metadata);
  assert.deepEqual(recorded[1].involved.metadata, { name: "n1", uid: "uid-of-n1" });
  assert.equal(recorded[1].involved.kind, "BootcNode");
});

Deno.test("PlannedEvents: without a sink nothing is recorded", async () => {
  await new PlannedEvents(undefined, () => undefined).record(pool(), [
    {
      regarding: { kind: "BootcNodePool", name: "workers" },
      type: "Normal",
      reason: "A",
      message: "",
    },
  ]);
});

Deno.test("PlannedEvents: a Node's own events refer to it as kubelet does (v1 Node, its uid)", async () => {
  const recorded: KubeObject[] = [];
  const events = new PlannedEvents(
    {
      record: (involved) => {
        recorded.push(involved);
        return Promise.resolve();
      },
    },
    (name) => `bn-uid-of-${name}`,
    (name) => `node-uid-of-${name}`,
  );
  await events.record(pool(), [
    {
      regarding: { kind: "Node", name: "n1" },
      type: "Normal",
      reason: "SlotAssigned",
      message: "",
    },
  ]);
  assert.deepEqual(recorded, [{
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "n1", uid: "node-uid-of-n1" },
  }]);
});

Deno.test("withoutEventsAbout drops what a plan said about one node, keeps the pool's and others'", () => {
  const events: PlannedEvent[] = [
    {
      regarding: { kind: "Node", name: "n1" },
      type: "Normal",
      reason: "SlotAssigned",
      message: "",
    },
    { regarding: { kind: "BootcNode", name: "n1" }, type: "Normal", reason: "Staged", message: "" },
    {
      regarding: { kind: "Node", name: "n2" },
      type: "Normal",
      reason: "SlotAssigned",
      message: "",
    },
    {
      regarding: { kind: "BootcNodePool", name: "n1" },
      type: "Normal",
      reason: "Paused",
      message: "",
    },
  ];
  assert.deepEqual(withoutEventsAbout(events, new Set(["n1"])).map((e) => e.regarding), [
    { kind: "Node", name: "n2" },
    { kind: "BootcNodePool", name: "n1" },
  ]);
  assert.deepEqual(withoutEventsAbout(events, new Set()), events);
  assert.deepEqual(withoutEventsAbout(events, new Set(["n1", "n2"])).map((e) => e.regarding), [
    { kind: "BootcNodePool", name: "n1" },
  ]);
});

Deno.test("writesFailedEvent: a Warning on the pool with the error and the nodes left as they were", () => {
  const e = writesFailedEvent("p", new Error("admission denied"), new Set(["n2", "n1"]), 60_000)!;
  assert.deepEqual(e.regarding, { kind: "BootcNodePool", name: "p" });
  assert.equal(e.type, "Warning");
  assert.equal(e.reason, "WritesFailed");
  assert.equal(
    e.message,
    "a write of this pool's plan failed, tried again within 60 s (nodes left as they were: " +
      "n1, n2): admission denied",
  );
  const many = writesFailedEvent(
    "p",
    "x".repeat(2000),
    new Set(["a", "b", "c", "d", "e", "f", "g"]),
    60_000,
  )!;
  assert.match(many.message, /a, b, c, d, e and 2 more\): x+$/);
  assert.equal(many.message.length, 1024);
  // A conflict (the pool edited meanwhile) is retried at once: no event.
  assert.equal(
    writesFailedEvent(
      "p",
      new ConflictError({ status: 409, message: "modified" }),
      new Set(),
      60_000,
    ),
    undefined,
  );
});

Deno.test("writesFailedEvent: a failed read is worded as a read, the nodes as waiting (review 17 L4)", () => {
  const e = writesFailedEvent(
    "p",
    new Error("listing the pods of node n1 failed: forbidden"),
    new Set(["n1"]),
    5_000,
    { read: true },
  )!;
  assert.equal(e.reason, "WritesFailed");
  assert.equal(
    e.message,
    "a read this pool's plan needs failed, asked again within 5 s (nodes waiting, their pods " +
      "unknown: n1): listing the pods of node n1 failed: forbidden",
  );
});

Deno.test("withoutEventsAbout: a part of the status not written is told of by no event", () => {
  const events: PlannedEvent[] = [
    { ...poolEvent("p", "Normal", "Recovered", "healthy again"), ofStatus: "Degraded" },
    { ...poolEvent("p", "Normal", "TargetChanged", "rolling out x"), ofStatus: "Target" },
    { ...poolEvent("p", "Normal", "RolloutComplete", "done"), ofStatus: "UpToDate" },
    poolEvent("p", "Normal", "NodeAdded", "joined"),
  ];
  assert.deepEqual(withoutEventsAbout(events, new Set()), events);
  assert.deepEqual(
    withoutEventsAbout(events, new Set(), ALL_STATUS_PARTS).map((e) => e.reason),
    ["NodeAdded"],
    "the status was not written",
  );
  assert.deepEqual(
    withoutEventsAbout(events, new Set(), new Set(["Degraded"])).map((e) => e.reason),
    ["TargetChanged", "RolloutComplete", "NodeAdded"],
    "only the Degraded condition was not the plan's",
  );
});
