/**
 * Test doubles for the daemon's seams: an in-memory BootcNode/Node/Secret API
 * ({@linkcode FakeResource}), an event sink ({@linkcode FakeEvents}) and a fake
 * bootc host ({@linkcode FakeBootcHost}) that behaves like bootc for the
 * commands the daemon runs.
 *
 * @module
 */
import type { BootcNode } from "../lib/api/mod.ts";
import type { EventSink } from "./agent.ts";
import {
  type ApplyHandle,
  type ApplyOptions,
  BootcCommandError,
  BootcCommandStopped,
  type BootcExecutor,
  type LockOptions,
  type RollbackOptions,
  type StageOptions,
} from "../lib/bootc/executor.ts";
import type { BootEntry, Host } from "../lib/bootc/types.ts";
import type { StageMethod } from "../lib/bootc/version.ts";
import { NotFoundError } from "../lib/kube/errors.ts";
import type {
  KubeList,
  KubeObject,
  PatchOptions,
  ResourceClient,
  WatchEvent,
  WatchOptions,
} from "../lib/kube/types.ts";

/** A request the fake API served. */
export interface FakeCall {
  verb: "get" | "list" | "watch" | "patch" | "create" | "update" | "updateStatus" | "delete";
  name?: string;
  fieldSelector?: string;
  subresource?: string;
}

function notFound(name: string): NotFoundError {
  return new NotFoundError({ status: 404, reason: "NotFound", message: `"${name}" not found` });
}

/**
 * An in-memory cluster-scoped (or single-namespace) resource with list, watch
 * (field selector `metadata.name=`), get and JSON-patch of `/status`. It
 * records every call so tests can count API traffic.
 */
export class FakeResource<T extends KubeObject> implements ResourceClient<T> {
  readonly calls: FakeCall[] = [];
  #items = new Map<string, T>();
  #rv = 1;
  #watchers = new Set<(ev: WatchEvent<T>) => void>();
  /** Fails the next status patches with this error, when set. */
  failPatch?: Error;
  /** Fails GETs with this error, when set. */
  failGet?: Error;
  /** Called at the start of every GET (a test can change the object under the caller's feet). */
  beforeGet?: (name: string) => void;
  /** Called at the start of every status patch (the world may change while a write is out). */
  beforePatch?: (name: string) => void;

  /** Stores `object` (create or replace, as the controller would) and notifies watchers. */
  put(object: T): T {
    const name = object.metadata!.name!;
    const old = this.#items.get(name);
    const oldGen = old?.metadata?.generation ?? 0;
    const specChanged = JSON.stringify((old as { spec?: unknown })?.spec) !==
      JSON.stringify((object as { spec?: unknown }).spec);
    const stored = structuredClone(object);
    stored.metadata = {
      ...stored.metadata,
      resourceVersion: String(++this.#rv),
      generation: old ? (specChanged ? oldGen + 1 : oldGen) : 1,
    };
    if (old && (old as { status?: unknown }).status && !(stored as { status?: unknown }).status) {
      (stored as { status?: unknown }).status = (old as { status?: unknown }).status;
    }
    this.#items.set(name, stored);
    this.#emit({ type: old ? "MODIFIED" : "ADDED", object: stored });
    return structuredClone(stored);
  }

  /** The stored object. */
  peek(name: string): T | undefined {
    const item = this.#items.get(name);
    return item ? structuredClone(item) : undefined;
  }

  /** Deletes an object and notifies watchers. */
  remove(name: string): void {
    const old = this.#items.get(name);
    if (!old) return;
    this.#items.delete(name);
    this.#emit({ type: "DELETED", object: old });
  }

  #emit(ev: WatchEvent<T>): void {
    for (const w of this.#watchers) w(structuredClone(ev));
  }

  /** Number of calls of `verb` (optionally on the status subresource). */
  count(verb: FakeCall["verb"], subresource?: string): number {
    return this.calls.filter((c) => c.verb === verb && c.subresource === subresource).length;
  }

  get(name: string): Promise<T> {
    this.calls.push({ verb: "get", name });
    this.beforeGet?.(name);
    if (this.failGet) return Promise.reject(this.failGet);
    const item = this.#items.get(name);
    if (!item) return Promise.reject(notFound(name));
    return Promise.resolve(structuredClone(item));
  }

  #select(fieldSelector?: string): T[] {
    const m = /^metadata\.name=(.+)$/.exec(fieldSelector ?? "");
    return [...this.#items.values()].filter((o) => !m || o.metadata?.name === m[1]);
  }

  list(options: { fieldSelector?: string } = {}): Promise<KubeList<T>> {
    this.calls.push({ verb: "list", fieldSelector: options.fieldSelector });
    return Promise.resolve({
      metadata: { resourceVersion: String(this.#rv) },
      items: structuredClone(this.#select(options.fieldSelector)),
    });
  }

  async *watch(options: WatchOptions = {}): AsyncIterable<WatchEvent<T>> {
    this.calls.push({ verb: "watch", fieldSelector: options.fieldSelector });
    const m = /^metadata\.name=(.+)$/.exec(options.fieldSelector ?? "");
    const queue: WatchEvent<T>[] = [];
    let wake: (() => void) | undefined;
    const push = (ev: WatchEvent<T>) => {
      if (m && ev.object.metadata?.name !== m[1]) return;
      queue.push(ev);
      wake?.();
    };
    this.#watchers.add(push);
    const signal = options.signal;
    const onAbort = () => wake?.();
    signal?.addEventListener("abort", onAbort);
    try {
      while (!signal?.aborted) {
        if (queue.length === 0) {
          await new Promise<void>((r) => wake = r);
          wake = undefined;
          continue;
        }
        yield queue.shift()!;
      }
    } finally {
      this.#watchers.delete(push);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  patch(name: string, patch: unknown, options: PatchOptions): Promise<T> {
    this.calls.push({ verb: "patch", name, subresource: options.subresource });
    this.beforePatch?.(name);
    if (this.failPatch) return Promise.reject(this.failPatch);
    const item = this.#items.get(name);
    if (!item) return Promise.reject(notFound(name));
    if (options.type !== "json" || options.subresource !== "status") {
      return Promise.reject(new Error("fake supports only JSON patches of /status"));
    }
    const ops = patch as { op: string; path: string; value: unknown }[];
    const next = structuredClone(item) as T & { status?: unknown };
    for (const op of ops) {
      if (op.op !== "add" || op.path !== "/status") {
        return Promise.reject(new Error(`unsupported op ${op.op} ${op.path}`));
      }
      next.status = structuredClone(op.value);
    }
    next.metadata = { ...next.metadata, resourceVersion: String(++this.#rv) };
    this.#items.set(name, next);
    this.#emit({ type: "MODIFIED", object: next });
    return Promise.resolve(structuredClone(next));
  }

  create(object: T): Promise<T> {
    this.calls.push({ verb: "create" });
    return Promise.resolve(this.put(object));
  }

  update(object: T): Promise<T> {
    this.calls.push({ verb: "update" });
    return Promise.resolve(this.put(object));
  }

  updateStatus(): Promise<T> {
    this.calls.push({ verb: "updateStatus" });
    return Promise.reject(new Error("not supported by the fake"));
  }

  delete(name: string): Promise<void> {
    this.calls.push({ verb: "delete", name });
    this.remove(name);
    return Promise.resolve();
  }
}

/** A BootcNode resource fake. */
export type FakeNodes = FakeResource<BootcNode>;

/** An event the agent recorded. */
export interface RecordedEvent {
  /** Kind/name of the involved object. */
  involved: string;
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** An {@linkcode EventSink} that keeps what was recorded. */
export class FakeEvents implements EventSink {
  readonly events: RecordedEvent[] = [];

  record(
    involved: KubeObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void> {
    this.events.push({
      involved: `${involved.kind}/${involved.metadata?.name}`,
      type,
      reason,
      message,
    });
    return Promise.resolve();
  }

  /** The recorded events of `reason`. */
  of(reason: string): RecordedEvent[] {
    return this.events.filter((e) => e.reason === reason);
  }
}

/** The ownerReferences of a BootcNode controlled by pool `name` (as the controller writes them). */
export function poolOwner(
  name = "workers",
): NonNullable<KubeObject["metadata"]>["ownerReferences"] {
  return [{
    apiVersion: "node.bootc.dev/v1alpha1",
    kind: "BootcNodePool",
    name,
    uid: "00000000-0000-4000-8000-000000000001",
    controller: true,
    blockOwnerDeletion: true,
  }];
}

/** Builds a bootc boot entry for `pullspec` (its digest doubles as `imageDigest`). */
export function fakeEntry(
  pullspec: string,
  options: { downloadOnly?: boolean; imageDigest?: string } = {},
): BootEntry {
  return {
    image: {
      image: { image: pullspec, transport: "registry" },
      imageDigest: options.imageDigest ?? pullspec.split("@")[1] ?? "sha256:" + "0".repeat(64),
      architecture: "amd64",
    },
    cachedUpdate: null,
    incompatible: false,
    pinned: false,
    softRebootCapable: true,
    ...(options.downloadOnly === undefined ? {} : { downloadOnly: options.downloadOnly }),
    ostree: { checksum: "0", deploySerial: 0, stateroot: "default" },
    composefs: null,
  };
}

/** Commands the fake host received, in order. */
export type FakeHostCall =
  | "version"
  | "status"
  | `stage ${string}`
  | "lockStaged"
  | `apply ${string}`
  | `rollback${string}`
  | "unqueueRollback"
  | "mask";

/** A fake bootc host with bootc's staging semantics. */
export class FakeBootcHost implements BootcExecutor {
  booted: BootEntry | null;
  staged: BootEntry | null = null;
  rollback: BootEntry | null = null;
  /** `bootc rollback` queued the rollback deployment for the next boot. */
  rollbackQueued = false;
  versionText = "bootc 1.16.10";
  /** What `systemctl is-system-running` prints. */
  systemStateText = "running";
  /** The units `systemctl list-units --state=failed` lists. */
  failed: string[] = [];
  /** `systemctl is-active` answers by unit (absent: `inactive`). */
  unitActive: Record<string, string> = {};
  /** Makes every systemctl health query fail with this message while set. */
  systemctlError?: string;
  /** What `systemd-bless-boot status` prints. */
  blessText = "good";
  masked = false;
  readonly calls: FakeHostCall[] = [];
  /** Makes the next stage commands fail with this bootc error line. */
  stageError?: string;
  /** Makes status fail with this message while set. */
  statusError?: string;
  /** Called at the start of each command (to assert what was persisted before it). */
  beforeCommand?: (call: FakeHostCall) => void;
  #applyExit?: (e: BootcCommandError | undefined) => void;
  /** True once an apply asked for a reboot. */
  rebootRequested = false;
  #gate?: Promise<void>;

  /** Creates a host booted into `booted` (null: not a bootc host). */
  constructor(booted: string | null) {
    this.booted = booted ? fakeEntry(booted) : null;
  }

  /** Holds stage commands until the returned function is called. */
  holdStages(): () => void {
    let release!: () => void;
    this.#gate = new Promise((r) => release = r);
    return () => {
      this.#gate = undefined;
      release();
    };
  }

  #call(call: FakeHostCall) {
    this.calls.push(call);
    this.beforeCommand?.(call);
  }

  version(): Promise<string> {
    this.#call("version");
    return Promise.resolve(this.versionText);
  }

  status(): Promise<Host> {
    this.#call("status");
    if (this.statusError) {
      return Promise.reject(new BootcCommandError(`bootc status: ${this.statusError}`));
    }
    return Promise.resolve(structuredClone({
      apiVersion: "org.containers.bootc/v1",
      kind: "BootcHost",
      metadata: { name: "host" },
      spec: { image: (this.staged ?? this.booted)?.image?.image ?? null },
      status: {
        booted: this.booted,
        staged: this.staged,
        rollback: this.rollback,
        otherDeployments: [],
        rollbackQueued: this.rollbackQueued,
        type: this.booted ? "bootcHost" : null,
      },
    }));
  }

  async stage(image: string, method: StageMethod, options: StageOptions = {}): Promise<void> {
    this.#call(`stage ${image}`);
    if (this.#gate) {
      // A held pull ends when released, or stops (changing nothing) when its signal aborts.
      const signal = options.signal;
      await new Promise<void>((resolve, reject) => {
        const onAbort = () =>
          reject(new BootcCommandStopped("bootc switch --download-only: stopped"));
        if (signal?.aborted) return onAbort();
        signal?.addEventListener("abort", onAbort, { once: true });
        this.#gate!.then(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
    if (this.stageError) {
      throw new BootcCommandError(`bootc switch --download-only: ${this.stageError}`);
    }
    this.staged = fakeEntry(image, { downloadOnly: method === "switch-download-only" });
    if (method !== "switch-download-only") this.staged.downloadOnly = true;
  }

  lockStaged(_options?: LockOptions): Promise<void> {
    this.#call("lockStaged");
    if (this.staged) this.staged.downloadOnly = true;
    return Promise.resolve();
  }

  apply(options: ApplyOptions): ApplyHandle {
    this.#call(`apply ${options.method}${options.soft ? " soft" : ""}`);
    if (this.staged) this.staged.downloadOnly = false;
    this.rebootRequested = true;
    return { exited: new Promise((resolve) => this.#applyExit = resolve) };
  }

  applyRollback(options: RollbackOptions): ApplyHandle {
    this.#call(`rollback${options.soft ? " soft" : ""}`);
    if (this.rollback) {
      this.staged = null;
      this.rollbackQueued = !this.rollbackQueued;
    }
    this.rebootRequested = true;
    return { exited: new Promise((resolve) => this.#applyExit = resolve) };
  }

  unqueueRollback(): Promise<void> {
    this.#call("unqueueRollback");
    if (this.rollback) {
      this.staged = null;
      this.rollbackQueued = !this.rollbackQueued;
    }
    return Promise.resolve();
  }

  /** systemctl health queries received (kept out of `calls`, which lists bootc's commands). */
  healthQueries = 0;

  #health(): Promise<void> {
    this.healthQueries++;
    return this.systemctlError
      ? Promise.reject(new BootcCommandError(`systemctl: ${this.systemctlError}`))
      : Promise.resolve();
  }

  async systemState(): Promise<string> {
    await this.#health();
    return this.systemStateText;
  }

  async failedUnits(): Promise<string[]> {
    await this.#health();
    return [...this.failed];
  }

  async unitStates(units: readonly string[]): Promise<string[]> {
    await this.#health();
    return units.map((u) => this.unitActive[u] ?? "inactive");
  }

  async blessStatus(): Promise<string> {
    await this.#health();
    return this.blessText;
  }

  /** Ends a pending apply command with `error` (undefined: exit 0). */
  finishApply(error?: string): void {
    this.rebootRequested = error === undefined && this.rebootRequested;
    this.#applyExit?.(error ? new BootcCommandError(error) : undefined);
    this.#applyExit = undefined;
  }

  /**
   * Reboots: an unlocked staged entry becomes booted; a locked one is discarded; otherwise a
   * queued rollback boots (the booted entry becomes the rollback).
   */
  reboot(): void {
    if (this.staged && this.staged.downloadOnly === false) {
      this.rollback = this.booted;
      this.booted = { ...this.staged, downloadOnly: false };
    } else if (this.rollbackQueued && this.rollback) {
      [this.booted, this.rollback] = [this.rollback, this.booted];
    }
    this.rollbackQueued = false;
    this.staged = null;
    this.rebootRequested = false;
    this.masked = false;
    this.#applyExit?.(undefined);
    this.#applyExit = undefined;
  }

  maskAutoUpdates(): Promise<void> {
    this.#call("mask");
    this.masked = true;
    return Promise.resolve();
  }

  autoUpdatesMasked(): Promise<boolean> {
    return Promise.resolve(this.masked);
  }
}

/** Polls `check` until it returns true (real time), failing after `timeoutMs`. */
export async function waitFor(
  check: () => boolean,
  what: string,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
