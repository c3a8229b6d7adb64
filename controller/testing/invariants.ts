/**
 * A reusable rollout invariant checker: fed every Node and BootcNode event, it
 * proves that no pool ever has more than `maxUnavailable` nodes in reboot
 * slots, nor more than that many nodes cordoned by the operator.
 *
 * Each rule is checked on a single watch stream (slots on BootcNodes, cordons
 * on Nodes), because events of two streams can arrive in any order relative
 * to each other; within one stream they arrive in the order they happened, so
 * a breach seen here really happened.
 *
 * {@linkcode RolloutInvariants} is pure bookkeeping; {@linkcode watchRolloutInvariants}
 * wires it to informers.
 *
 * @module
 */
import { ANNOTATION_IN_REBOOT_SLOT, type BootcNode, LABEL_POOL } from "../../lib/api/mod.ts";
import { Informer, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import type { Node } from "../reconciler.ts";

/** Options of {@linkcode RolloutInvariants}. */
export interface RolloutInvariantsOptions {
  /** Resolved maxUnavailable per pool name. */
  maxUnavailable: Record<string, number>;
  /** Which pool each watched node belongs to (nodes not listed are ignored for cordons). */
  nodePools: Record<string, string>;
  /** Nodes already cordoned before the rollout (their cordon is not ours). */
  preCordoned?: Iterable<string>;
}

/** Bookkeeping of the rollout invariants. */
export class RolloutInvariants {
  /** Every breach, in the order seen. */
  readonly violations: string[] = [];
  /** The most slot nodes seen at once, per pool. */
  readonly maxSlots: Record<string, number> = {};
  /** The most nodes cordoned by the operator seen at once, per pool. */
  readonly maxCordoned: Record<string, number> = {};
  #opts: RolloutInvariantsOptions;
  #preCordoned: Set<string>;
  #slots = new Map<string, string>(); // node → pool
  #cordoned = new Set<string>();

  /** Creates the checker. */
  constructor(options: RolloutInvariantsOptions) {
    this.#opts = options;
    this.#preCordoned = new Set(options.preCordoned ?? []);
  }

  #count(pool: string, set: Iterable<string>, pools: (n: string) => string | undefined): number {
    let n = 0;
    for (const node of set) if (pools(node) === pool) n++;
    return n;
  }

  /** Feeds a BootcNode event (`deleted` for DELETED). */
  onBootcNode(bn: BootcNode, deleted = false): void {
    const name = bn.metadata.name ?? "";
    const pool = bn.metadata.labels?.[LABEL_POOL] ?? "";
    const inSlot = !deleted && bn.metadata.annotations?.[ANNOTATION_IN_REBOOT_SLOT] !== undefined;
    if (inSlot) this.#slots.set(name, pool);
    else this.#slots.delete(name);
    if (!inSlot) return;
    const n = this.#count(pool, this.#slots.keys(), (x) => this.#slots.get(x));
    this.maxSlots[pool] = Math.max(this.maxSlots[pool] ?? 0, n);
    const max = this.#opts.maxUnavailable[pool];
    if (max !== undefined && n > max) {
      this.violations.push(`pool ${pool}: ${n} nodes in reboot slots (max ${max}) after ${name}`);
    }
  }

  /** Feeds a Node event (`deleted` for DELETED). */
  onNode(node: Node, deleted = false): void {
    const name = node.metadata?.name ?? "";
    const pool = this.#opts.nodePools[name];
    if (pool === undefined) return;
    const ours = !deleted && node.spec?.unschedulable === true && !this.#preCordoned.has(name);
    if (ours) this.#cordoned.add(name);
    else this.#cordoned.delete(name);
    if (!ours) return;
    const n = this.#count(pool, this.#cordoned, (x) => this.#opts.nodePools[x]);
    this.maxCordoned[pool] = Math.max(this.maxCordoned[pool] ?? 0, n);
    const max = this.#opts.maxUnavailable[pool];
    if (max !== undefined && n > max) {
      this.violations.push(
        `pool ${pool}: ${n} nodes cordoned by the operator (max ${max}) after ${name}`,
      );
    }
  }
}

/** A running watch; `stop()` ends it. */
export interface InvariantWatch {
  invariants: RolloutInvariants;
  /** Resolves once both informers have listed. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/** Watches Nodes and BootcNodes and feeds a {@linkcode RolloutInvariants}. */
export function watchRolloutInvariants(
  client: KubeClient,
  options: RolloutInvariantsOptions,
): InvariantWatch {
  const invariants = new RolloutInvariants(options);
  const ac = new AbortController();
  const nodes = new Informer<Node>({ resource: client.resource<Node>(Resources.nodes) });
  const bns = new Informer<BootcNode>({
    resource: client.resource<BootcNode>(Resources.bootcNodes),
  });
  nodes.onAdd((n) => invariants.onNode(n));
  nodes.onUpdate((_o, n) => invariants.onNode(n));
  nodes.onDelete((n) => invariants.onNode(n, true));
  bns.onAdd((b) => invariants.onBootcNode(b));
  bns.onUpdate((_o, b) => invariants.onBootcNode(b));
  bns.onDelete((b) => invariants.onBootcNode(b, true));
  const running = Promise.all([nodes.start(ac.signal), bns.start(ac.signal)]);
  return {
    invariants,
    synced: Promise.all([nodes.waitForSync(ac.signal), bns.waitForSync(ac.signal)]).then(() => {}),
    async stop() {
      ac.abort();
      await running;
    },
  };
}
