/**
 * The last check of every slot grant, as it is written: the cluster budgets as the
 * caches show them at that moment, not as the plan saw them. A budget created,
 * tightened or moved while a reconcile was planning or waiting for room still holds,
 * and pools planned at the same time never both take a budget's last place.
 *
 * The check and the note of the grant happen in one synchronous step, so no other
 * grant of this process can come between them. A grant counts from then on: while its
 * write is under way (however long that takes), and once it landed until the caches
 * show it. Releases written count as done likewise. The planner counts the same
 * writes (`unseen`), so a pool plans a wait for them rather than a grant refused here.
 *
 * @module
 */
import { isDisrupted } from "../../lib/api/annotations.ts";
import type { ClusterView } from "../gates/gate.ts";
import { grantRefusal, type UnseenSlotWrites } from "../gates/cluster_budget.ts";
import type { NodeSummary } from "../model/types.ts";

/** How long a slot change, once written, is counted without the caches showing it. */
const UNSEEN_MS = 60_000;

/** What {@linkcode GrantAdmission} reads. */
export interface GrantAdmissionOptions {
  /** True when any cluster budget exists (cheap: no view is built without one). */
  budgetsExist: () => boolean;
  /** The cluster as the budgets count it, from the caches now (`budgetView`). */
  view: () => ClusterView;
  /** The cached Node (its labels and disruption record), if any. */
  node: (name: string) => NodeSummary | undefined;
  /** Milliseconds now (monotonic enough for the unseen window). */
  now: () => number;
}

/** Checks every grant against the budgets at its write (see the module comment). */
export class GrantAdmission {
  #o: GrantAdmissionOptions;
  /**
   * Slot writes of this process the caches may not show yet: node → granted (else released),
   * under way (`at` undefined) or landed at `at`.
   */
  #unseen = new Map<string, { granted: boolean; at?: number }>();

  /** An admission reading `options`. */
  constructor(options: GrantAdmissionOptions) {
    this.#o = options;
  }

  /**
   * Why `node`'s grant may not be written now (a budget has no room for it as things stand),
   * or undefined: then it counts as granted from this moment, so a grant checked after it
   * counts it. Synchronous, so nothing comes between the check and that note.
   */
  admit(node: string): string | undefined {
    this.#forgetSeen();
    if (this.#o.budgetsExist()) {
      const labels = this.#o.node(node)?.labels ?? {};
      const why = grantRefusal({ ...this.#o.view(), unseen: this.#written() }, {
        name: node,
        labels,
      });
      if (why !== undefined) return why;
    }
    this.#unseen.set(node, { granted: true });
    return undefined;
  }

  /** `node`'s admitted grant landed (or may have): it counts until the caches show it. */
  landed(node: string): void {
    if (this.#unseen.get(node)?.granted) {
      this.#unseen.set(node, { granted: true, at: this.#o.now() });
    }
  }

  /** `node`'s admitted grant surely did not land (its write was refused). */
  unwritten(node: string): void {
    if (this.#unseen.get(node)?.granted) this.#unseen.delete(node);
  }

  /** The slot writes the caches may not show yet (what the planner counts beside them). */
  unseen(): UnseenSlotWrites {
    this.#forgetSeen();
    return this.#written();
  }

  /** `node`'s slot was released (its Node's record removed): it counts no longer. */
  released(node: string): void {
    this.#unseen.set(node, { granted: false, at: this.#o.now() });
  }

  #written(): UnseenSlotWrites {
    const granted = new Set<string>();
    const released = new Set<string>();
    for (const [node, w] of this.#unseen) (w.granted ? granted : released).add(node);
    return { granted, released };
  }

  /** Drops what the caches show now, and what is too old to be missing from them. */
  #forgetSeen(): void {
    const now = this.#o.now();
    for (const [node, w] of this.#unseen) {
      if (w.at === undefined) continue; // under way: it may land any time
      const cached = this.#o.node(node);
      const shown = cached !== undefined &&
        isDisrupted({ metadata: { annotations: cached.annotations } }) === w.granted;
      if (shown || now - w.at > UNSEEN_MS) this.#unseen.delete(node);
    }
  }
}
