import assert from "node:assert/strict";
import {
  type BootcNodeFacts,
  type NodeFacts,
  type NodeFactsInput,
  type NodeRead,
  readNodeFacts,
} from "./node_facts.ts";
import type { Condition } from "./schema.ts";

const d = (c: string) => "sha256:" + c.repeat(64);
const A = `registry.example/os@${d("a")}`;
const B = `registry.example/os@${d("b")}`;
const NOW = new Date("2026-01-01T01:00:00Z");
const EARLIER = "2026-01-01T00:59:00Z";
const LONG_AGO = "2026-01-01T00:00:00Z";
const LATER = "2026-01-01T02:00:00Z";

const SLOT = { "bootc.dev/in-reboot-slot": EARLIER, "bootc.dev/reboot-slot-pool": "workers" };
const GRANT = { ...SLOT, "bootc.dev/was-cordoned": "false" };
const DRAINED = { ...GRANT, "bootc.dev/drained-at": EARLIER, "bootc.dev/drained-for": B };

function entry(image: string) {
  return { image, imageDigest: image.split("@")[1] };
}
function idle(reason: string, since = EARLIER): Condition {
  const status = reason === "Idle" ? "True" : "False";
  return { type: "Idle", status, reason, message: "", lastTransitionTime: since };
}

/** A BootcNode desiring B: `booted` A unless said, its daemon's Idle reason, its mirror. */
function bn(o: {
  idle?: string;
  since?: string;
  booted?: string;
  staged?: string;
  rollback?: string;
  booting?: boolean;
  mirror?: string;
  rebooted?: string;
} = {}): BootcNodeFacts {
  const conditions = [idle(o.idle ?? "Idle", o.since)];
  if (o.rebooted) {
    conditions.push({
      type: "Rebooted",
      status: "False",
      reason: o.rebooted,
      message: "",
      lastTransitionTime: EARLIER,
    });
  }
  return {
    metadata: {
      annotations: o.mirror !== undefined ? { "bootc.dev/was-cordoned": o.mirror } : {},
      ownerReferences: [{ kind: "BootcNodePool", name: "workers", controller: true }],
    },
    spec: { desiredImage: B, desiredImageState: o.booting ? "Booted" : "Staged" },
    status: {
      booted: entry(o.booted ?? A),
      ...(o.staged ? { staged: entry(o.staged) } : {}),
      ...(o.rollback ? { rollback: entry(o.rollback) } : {}),
      conditions,
    },
  };
}
function node(annotations: Record<string, string> = {}, o: Partial<NodeRead> = {}): NodeRead {
  return { annotations, unschedulable: true, ready: true, readySince: LONG_AGO, ...o };
}
function facts(input: Omit<NodeFactsInput, "now"> & { now?: Date }): NodeFacts {
  return readNodeFacts({ now: NOW, ...input });
}

Deno.test("readNodeFacts: the record, its copy and the prior cordon", () => {
  const cases: [string, NodeFactsInput, Partial<NodeFacts>][] = [
    ["no record", { node: node({}, { unschedulable: false }) }, {
      recorded: false,
      stray: false,
    }],
    ["the pool's name alone is no record", {
      node: node({ "bootc.dev/reboot-slot-pool": "workers" }),
      bootcNode: bn(),
    }, { onNode: false, recorded: false, stray: false }],
    ["a grant", { node: node(GRANT), bootcNode: bn({ mirror: "false" }) }, {
      recorded: true,
      priorCordon: "false",
      mirror: "false",
      stray: false,
      drained: false,
    }],
    ["only the copy", { node: node(), bootcNode: bn({ mirror: "true" }) }, {
      recorded: true,
      priorCordon: "true",
      stray: false,
    }],
    ["the record's own state wins", {
      node: node({ ...GRANT, "bootc.dev/was-cordoned": "true" }),
      bootcNode: bn({ mirror: "false" }),
    }, { priorCordon: "true" }],
    ["an unreadable state is none", {
      node: node({ ...GRANT, "bootc.dev/was-cordoned": "maybe" }),
      bootcNode: bn(),
    }, { priorCordon: undefined }],
    ["drained for the desired image", { node: node(DRAINED), bootcNode: bn() }, {
      drained: true,
      drainedAt: new Date(EARLIER),
    }],
    ["drained for another image", {
      node: node({ ...DRAINED, "bootc.dev/drained-for": A }),
      bootcNode: bn(),
    }, { drained: false, drainedAt: undefined }],
    ["a slot time ahead of the clock is unreadable", {
      node: node({ ...GRANT, "bootc.dev/in-reboot-slot": LATER }),
      bootcNode: bn({ mirror: "false" }),
    }, { slotAt: undefined }],
  ];
  for (const [name, input, want] of cases) {
    const got = facts(input);
    for (const [key, value] of Object.entries(want)) {
      assert.deepEqual(got[key as keyof NodeFacts], value, `${name}: ${key}`);
    }
  }
});

Deno.test("readNodeFacts: a stray record is one no grant can have written", () => {
  const stray = (annotations: Record<string, string>, b = bn(), o: Partial<NodeRead> = {}) =>
    facts({ node: node(annotations, o), bootcNode: b }).stray;
  // One annotation of the grant's three, without a copy or a reboot under way.
  assert.equal(stray({ "bootc.dev/in-reboot-slot": EARLIER }), true);
  // The pool's name alone is no record at all (as every budget reads it): nothing to drop.
  assert.equal(stray({ "bootc.dev/reboot-slot-pool": "workers" }), false);
  assert.equal(stray({ "bootc.dev/was-cordoned": "false" }, bn(), { unschedulable: false }), true);
  // Two, but no prior cordon on a node neither cordoned nor drained.
  assert.equal(stray(SLOT, bn(), { unschedulable: false }), true);
  // A grant as written, or one with its copy, or with its daemon rebooting: genuine.
  assert.equal(stray(GRANT), false);
  assert.equal(stray(SLOT), false); // cordoned: the grant's cordon went with it
  assert.equal(stray({ "bootc.dev/in-reboot-slot": EARLIER }, bn({ mirror: "false" })), false);
  assert.equal(stray({ "bootc.dev/in-reboot-slot": EARLIER }, bn({ idle: "Rebooting" })), false);
  // The three written together by hand pass as a grant: the daemon's rule still needs a drain.
  assert.equal(stray(GRANT, bn(), { unschedulable: false }), false);
});

Deno.test("readNodeFacts: rebooting, and a host that fell back is up", () => {
  const rebooting = facts({ node: node(DRAINED), bootcNode: bn({ idle: "Rebooting" }) });
  assert.equal(rebooting.rebooting, true);
  assert.deepEqual(rebooting.rebootReport, { since: new Date(EARLIER) });
  const fellBack = bn({ idle: "Rebooting", rollback: B, rebooted: "FellBack" });
  const up = facts({ node: node(DRAINED), bootcNode: fellBack });
  assert.equal(up.fellBack, true);
  assert.equal(up.rebooting, false);
  assert.ok(up.rebootReport, "the raw report is kept");
  // A report time ahead of the clock is no time.
  const ahead = facts({ bootcNode: bn({ idle: "Rebooting", since: LATER }) });
  assert.deepEqual(ahead.rebootReport, {});
});

Deno.test("readNodeFacts: may the machine be down", () => {
  const ready = (r: boolean) => node(DRAINED, { ready: r });
  const asked = (o: Parameters<typeof bn>[0] = {}) => bn({ booting: true, ...o });
  const down = (input: Omit<NodeFactsInput, "now">, now = NOW) => facts({ ...input, now }).down;
  // Asked to reboot (Booted, slot, drain for the image): down until booted, reported, Ready.
  assert.match(down({ node: ready(true), bootcNode: asked() })?.waitsFor ?? "", /to finish/);
  assert.equal(down({ node: ready(true), bootcNode: asked({ booted: B }) }), undefined);
  assert.match(
    down({ node: ready(false), bootcNode: asked({ booted: B }) })?.waitsFor ?? "",
    /Ready again/,
  );
  // Rebooting by its daemon's account, whatever the spec asks now (a retarget mid-reboot).
  assert.ok(down({ node: ready(true), bootcNode: bn({ idle: "Rebooting", booted: B }) }));
  // A host that fell back is up once Ready.
  const fellBack = asked({ idle: "Rebooting", rollback: B, rebooted: "FellBack" });
  assert.equal(down({ node: ready(true), bootcNode: fellBack }), undefined);
  // Booted without the slot and drain the daemon needs (a hand edit): nothing to wait for.
  assert.equal(down({ node: node({}), bootcNode: asked() }), undefined);
  // The deadline is the reboot timeout from the finished drain.
  const late =
    facts({ node: ready(false), bootcNode: asked({ booted: B }), rebootTimeoutMs: 30_000 })
      .down;
  assert.deepEqual(late?.deadline, new Date("2026-01-01T00:59:30Z"));
  assert.equal(late?.overdue, true);
  // A daemon stuck in Rebooting without any record: down, and overdue from its report.
  const stuck =
    facts({ node: node({}), bootcNode: bn({ idle: "Rebooting" }), rebootTimeoutMs: 60_000 })
      .down;
  assert.equal(stuck?.overdue, true);
});

Deno.test("readNodeFacts: down with its Node object gone, up to the reboot timeout", () => {
  const b = bn({ idle: "Rebooting", since: LONG_AGO });
  const at = (now: string) =>
    readNodeFacts({ bootcNode: b, rebootTimeoutMs: 3_600_000, now: new Date(now) }).down;
  const within = at("2026-01-01T00:30:00Z");
  assert.match(within?.waitsFor ?? "", /its Node object was deleted meanwhile/);
  assert.deepEqual(within?.deadline, new Date("2026-01-01T01:00:00Z"));
  assert.equal(within?.overdue, false);
  assert.equal(at("2026-01-01T01:00:00Z")?.overdue, true);
  assert.equal(facts({ bootcNode: bn({ idle: "Staged" }) }).down, undefined);
  // An unreadable time is overdue: no wait without a bound.
  const unreadable = facts({ bootcNode: bn({ idle: "Rebooting", since: "yesterday" }) }).down;
  assert.ok(unreadable);
  assert.equal(unreadable.deadline, undefined);
  assert.equal(unreadable.overdue, true);
});

Deno.test("readNodeFacts: without a BootcNode, a finished drain holds until Ready after it", () => {
  const drained = { ...GRANT, "bootc.dev/drained-at": EARLIER, "bootc.dev/drained-for": B };
  const down = (o: Partial<NodeRead>, now = NOW) =>
    readNodeFacts({ node: node(drained, o), rebootTimeoutMs: 600_000, now }).down;
  assert.match(down({ ready: false })?.waitsFor ?? "", /come back Ready/);
  assert.ok(down({ ready: true, readySince: LONG_AGO }), "Ready since before the drain");
  assert.equal(down({ ready: true, readySince: "2026-01-01T00:59:30Z" }), undefined);
  // Ready past the reboot timeout: its reboot, if any, is over.
  assert.equal(down({ ready: true, readySince: LONG_AGO }, new Date(LATER)), undefined);
  // No drain: nothing allowed a reboot.
  assert.equal(readNodeFacts({ node: node(GRANT), now: NOW }).down, undefined);
});
