/**
 * What a reconcile learns beside the API caches, never waiting for a registry or
 * Prometheus: the pool's pull Secret, its channel's latest tag listing, its
 * tag's latest resolution and its nodes' health-query verdicts. The pollers run
 * beside the work queue (`tag_resolution.ts`, `channel_checks.ts`,
 * `health_queries.ts`); each reconcile says what the pool wants and reads what
 * is known, and a new result wakes the pool. The decisions about that input are
 * the planner's (`channel_step.ts`, `resolution.ts`).
 *
 * @module
 */
import { ANNOTATION_SLOT_POOL, type BootcNode, type BootcNodePool } from "../../lib/api/mod.ts";
import type { Clock } from "../../lib/clock.ts";
import { type Informer, isNotFound, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import type { Logger } from "../../lib/log.ts";
import {
  ChannelChecks,
  type ChannelChecksOptions,
  type TagLister,
} from "../pollers/channel_checks.ts";
import { alertsQuery } from "../gates/alerts.ts";
import type { ObjectVerdict } from "../model/object_check.ts";
import { ObjectChecks } from "../pollers/object_checks.ts";
import { daemonSecretNames } from "../model/daemon_access.ts";
import type { QueryVerdict } from "../model/health.ts";
import {
  HealthQueries,
  type HealthQueriesOptions,
  type PrometheusCheck,
} from "../pollers/health_queries.ts";
import type { Node, Secret } from "./object_views.ts";
import { webhookSecretReader } from "./webhook_secrets.ts";
import {
  type ChannelPlan,
  channelWant,
  MAX_TRUST_CANDIDATES,
  plannedChannel,
  type PlannerOptions,
  pollIntervalMs,
  type ResolutionMemo,
  resolutionNeed,
  resolveTarget,
  type SignatureMemo,
  trustCandidates,
} from "../planner/planner.ts";
import { SignatureChecks } from "../pollers/signature_checks.ts";
import {
  type KeySecret,
  keySecretNames,
  type TrustedKeys,
  trustedKeys,
} from "../model/trusted_keys.ts";

/** How long a key Secret's content is used before it is read again. */
const KEY_SECRET_TTL_MS = 30_000;
import type { PoolIssue } from "../planner/pool_status.ts";
import type { ApprovalAnswer, ApprovalAsks } from "../model/approval.ts";
import { ApprovalRequests, type ApprovalRequestsOptions } from "../pollers/approval_requests.ts";
import { needsLookup, pullSecretVerdict, type SecretLookup } from "../model/pull_secret.ts";
import { type ImageResolver, secretDataHash } from "../pollers/resolver.ts";
import {
  type TagOutcome,
  TagResolution,
  type TagResolutionOptions,
} from "../pollers/tag_resolution.ts";

/** The pool's pull Secret as the plan and the pollers use it. */
export interface PoolSecret {
  /** sha256 of its data, when the pool names a usable Secret (for the BootcNodes). */
  hash?: string;
  /** Its `.dockerconfigjson` (tag resolution, channel listings). */
  dockerConfig?: string;
  issue?: PoolIssue;
}

/** Options of {@linkcode PoolSources}. */
export interface PoolSourcesOptions {
  client: KubeClient;
  /** The operator's namespace: pull Secrets must live there. */
  namespace: string;
  /** The cached pull Secrets (of the operator's namespace). */
  secrets: Informer<Secret>;
  resolver: ImageResolver;
  planner: PlannerOptions;
  clock: Clock;
  logger: Logger;
  /** Lets the daemons read the pools' pull Secrets (before a plan names one to them). */
  allowDaemons: () => Promise<void>;
  /** A result for `pool` is in: wake it. */
  wake: (pool: string) => void;
  /** A tag resolution for `pool` finished (before its wake-up). */
  resolved?: (pool: string, outcome: TagOutcome | undefined) => void;
  tagResolution?: Pick<
    TagResolutionOptions,
    "timeoutMs" | "initialBackoffMs" | "maxBackoffMs" | "jitter"
  >;
  healthQueries?: Pick<HealthQueriesOptions, "intervalMs" | "timeoutMs">;
  /** The approval webhook's retry tunables (tests shorten them). */
  approvalRequests?: Pick<ApprovalRequestsOptions, "initialBackoffMs" | "maxBackoffMs" | "jitter">;
  channelLister?: TagLister;
  channelChecks?: Pick<
    ChannelChecksOptions,
    "timeoutMs" | "initialBackoffMs" | "maxBackoffMs" | "jitter"
  >;
}

/** See the module documentation. */
export class PoolSources {
  #o: PoolSourcesOptions;
  /** Resolves tags beside the work queue; a reconcile only reads its latest results. */
  #tags: TagResolution;
  /** Polls pools' Prometheus health checks beside the work queue; a reconcile reads verdicts. */
  #healthQueries: HealthQueries;
  /** Polls pools' alert preconditions beside the work queue (a key per pool). */
  #alertQueries: HealthQueries;
  /** Reads pools' object preconditions beside the work queue (a loop per pool). */
  #objectChecks: ObjectChecks;
  /** Lists channel pools' repository tags beside the work queue, when their check is due. */
  #channels: ChannelChecks;
  /** Asks pools' approval webhooks beside the work queue; a reconcile reads the answers. */
  #approvals: ApprovalRequests;
  /** Verifies pools' candidate images beside the work queue; a reconcile reads verdicts. */
  #signatures: SignatureChecks;
  /** Key Secrets by name, as last read (bounded by the Secrets pools name, a few). */
  #keySecrets = new Map<string, { at: number; secret: KeySecret }>();

  /** Creates the pollers (idle until a pool wants something). */
  constructor(options: PoolSourcesOptions) {
    this.#o = options;
    const common = { clock: options.clock, logger: options.logger };
    this.#tags = new TagResolution({
      resolver: options.resolver,
      ...options.tagResolution,
      ...common,
      // A result (or a failure) wakes exactly the pools that use the tag.
      onResult: (pools) => {
        for (const p of pools) {
          options.resolved?.(p, this.#tags.latest(p));
          options.wake(p);
        }
      },
    });
    this.#signatures = new SignatureChecks({
      resolver: options.resolver,
      ...options.tagResolution,
      ...common,
      timeoutMs: undefined,
      onResult: (pools) => {
        for (const p of pools) options.wake(p.slice(0, p.indexOf("/")));
      },
    });
    this.#channels = new ChannelChecks({
      lister: options.channelLister ??
        (() => Promise.reject(new Error("this controller cannot list tags"))),
      ...options.channelChecks,
      ...common,
      onResult: (pools) => {
        for (const p of pools) options.wake(p);
      },
    });
    this.#healthQueries = new HealthQueries({
      ...options.healthQueries,
      ...common,
      // A changed verdict (or a streak long enough to pass) wakes the pool.
      onResult: (pool) => options.wake(pool),
    });
    this.#alertQueries = new HealthQueries({
      ...options.healthQueries,
      ...common,
      onResult: (pool) => options.wake(pool),
    });
    this.#objectChecks = new ObjectChecks({
      client: options.client,
      ...(options.logger ? { logger: options.logger } : {}),
      onResult: (pool) => options.wake(pool),
    });
    this.#approvals = new ApprovalRequests({
      ...options.approvalRequests,
      ...common,
      secretData: webhookSecretReader(options.client, options.namespace),
      // An answer or a failed attempt wakes the pool (its message names the attempt).
      onResult: (pool) => options.wake(pool),
    });
  }

  /** Drops everything `pool` wanted (it is gone). */
  forget(pool: string): void {
    this.#tags.forget(pool);
    this.#signatures.forgetPool(pool);
    this.#channels.forget(pool);
    this.#healthQueries.forget(pool);
    this.#alertQueries.forget(pool);
    this.#objectChecks.forget(pool);
    this.#approvals.forget(pool);
  }

  /** Stops every poll (leadership lost: a replica that does not lead polls nothing). */
  async stop(): Promise<void> {
    await this.#tags.forgetAll();
    await this.#signatures.forgetAll();
    this.#channels.forgetAll();
    await this.#healthQueries.close();
    await this.#alertQueries.close();
    await this.#objectChecks.close();
    await this.#approvals.close();
  }

  /** The pull Secrets the daemons may read: named by a pool and usable (see daemon_access.ts). */
  daemonSecretNames(pools: readonly BootcNodePool[]): string[] {
    const namespace = this.#o.namespace;
    return daemonSecretNames(
      pools.map((p) => ({ pullSecretRef: p.spec.pullSecretRef })),
      namespace,
      (name) => {
        const cached = this.#o.secrets.store.getByName(name, namespace);
        return cached !== undefined &&
          pullSecretVerdict({ name, namespace }, namespace, { found: true, secret: cached }).grant;
      },
    );
  }

  /**
   * The pool's pull Secret: its hash for the BootcNodes, its `.dockerconfigjson` for tag
   * resolution and any problem with it (controller/model/pull_secret.ts). Before the plan writes
   * the reference into BootcNodes, the daemons are allowed to read the Secret.
   */
  async pullSecret(pool: BootcNodePool): Promise<PoolSecret> {
    const ref = pool.spec.pullSecretRef;
    if (!ref) return {};
    const namespace = this.#o.namespace;
    const lookup: SecretLookup = needsLookup(ref, namespace)
      ? await this.#lookupSecret(ref.name)
      : { found: false };
    const verdict = pullSecretVerdict(ref, namespace, lookup);
    if (verdict.grant) {
      try {
        await this.#o.allowDaemons();
      } catch (e) {
        // The daemons will report the refused read on their BootcNodes; the loop retries.
        this.#o.logger.warn("cannot allow the daemons to read the pull secret", {
          pool: pool.metadata.name,
          error: e instanceof Error ? e.message : String(e),
        });
      }
    }
    return {
      hash: verdict.grant && lookup.found
        ? await secretDataHash(lookup.secret.data as Record<string, string> | undefined)
        : undefined,
      dockerConfig: verdict.dockerConfigJson,
      issue: verdict.issue,
    };
  }

  /**
   * What the approval webhook answered so far for `pool` (verdicts, and the last
   * failure of asks still pending). Never waits.
   */
  approvalAnswers(pool: BootcNodePool): ApprovalAnswer[] {
    return this.#approvals.answers(pool.metadata.name ?? "");
  }

  /** Declares what `pool`'s plan still wants its approval webhook asked (the rest is dropped). */
  wantApprovals(pool: BootcNodePool, asks: ApprovalAsks | undefined): void {
    const name = pool.metadata.name ?? "";
    this.#approvals.wantOnly(name, pool.metadata.deletionTimestamp ? undefined : asks);
  }

  /** Finds a Secret in the operator namespace: in the cache, else with a GET. */
  async #lookupSecret(name: string): Promise<SecretLookup> {
    const namespace = this.#o.namespace;
    const cached = this.#o.secrets.store.getByName(name, namespace);
    if (cached) return { found: true, secret: cached };
    // The cache holds kubernetes.io/dockerconfigjson Secrets only: a GET tells a missing
    // Secret from one of another type, so the pool's message can say which.
    try {
      const secret = await this.#o.client.resource<Secret>(Resources.secrets, namespace).get(name);
      return { found: true, secret };
    } catch (e) {
      if (isNotFound(e)) return { found: false };
      throw e;
    }
  }

  /**
   * The channel step for a pool that follows a channel (`channel_step.ts` decides):
   * its latest tag listing, asked for when the check is due and never waited for,
   * and the pool as the planner sees it (its ref the chosen version).
   */
  async channel(pool: BootcNodePool, secret: PoolSecret, now: Date): Promise<ChannelPlan> {
    const name = pool.metadata.name ?? "";
    const want = channelWant(pool, now, this.#o.planner);
    if (!want) {
      this.#channels.forget(name);
      return { planned: pool };
    }
    const listing = this.#channels.want(name, { ...want, ...await credentials(secret) });
    return plannedChannel({ pool, listing, now, planner: this.#o.planner });
  }

  /**
   * The latest resolution of the pool's tag, never waiting for a registry: the
   * pool tells {@linkcode TagResolution} what it wants and reads what is known.
   * Until a first result arrives there is none (the planner keeps the last target
   * and reports no failure); the result wakes the pool.
   */
  async resolution(
    pool: BootcNodePool,
    secret: PoolSecret,
    now: Date,
  ): Promise<ResolutionMemo | undefined> {
    const name = pool.metadata.name ?? "";
    // Without a memo the need comes from the status alone: "fresh" means the status
    // already holds a recent enough resolution (e.g. after a restart), so the first
    // attempt can wait until it is due.
    const need = resolutionNeed(pool, now, undefined, this.#o.planner);
    if ((need.kind !== "resolve" && need.kind !== "fresh") || pool.metadata.deletionTimestamp) {
      this.#tags.forget(name);
      return undefined;
    }
    const latest = this.#tags.want(name, {
      ref: pool.spec.image.ref ?? "",
      ...await credentials(secret),
      intervalMs: pollIntervalMs(pool, this.#o.planner),
      ...(need.kind === "fresh" ? { notBefore: need.nextAt } : {}),
    });
    // The key is the pool's current ref and credentials, so the result is for this generation.
    return latest && { generation: pool.metadata.generation, at: latest.at, result: latest.result };
  }

  /**
   * The latest signature verdicts of the images the pool's trust gate reads
   * (`trustCandidates`), never waiting for a registry; a verdict wakes the pool.
   * No verdicts without `spec.image.verification`; `keyErrors` name the keys that
   * cannot be used (a missing Secret, say: InvalidSpec). While a key Secret cannot
   * be read, no verdict is given (nothing new reaches a node).
   */
  async signatures(
    pool: BootcNodePool,
    secret: PoolSecret,
    resolution: ResolutionMemo | undefined,
    now: Date,
    bootcNodes: Iterable<BootcNode>,
  ): Promise<
    { signatures?: Map<string, SignatureMemo>; keyErrors?: string[]; hostKeys?: string[] }
  > {
    const name = pool.metadata.name ?? "";
    const policy = pool.spec.image.verification;
    const need = resolutionNeed(pool, now, resolution, this.#o.planner);
    const trusted = policy && !pool.metadata.deletionTimestamp
      ? await this.#trustedKeys(pool, now)
      : undefined;
    const images = need.kind !== "invalid" && trusted && trusted.errors.length === 0
      ? trustCandidates(pool, resolveTarget(pool, need, resolution, now), bootcNodes)
      : [];
    const checked = trusted?.pending ? [] : images.slice(0, MAX_TRUST_CANDIDATES);
    const found = new Map<string, SignatureMemo>();
    // What cannot be checked says why, so nothing waits on a verdict that never comes.
    for (const image of images.slice(checked.length)) {
      const message = trusted?.pending ??
        `not checked: the pool's nodes name more than ${MAX_TRUST_CANDIDATES} images`;
      found.set(image, { at: now, result: { ok: false, message } });
    }
    const subscribers = new Set(checked.map((image) => `${name}/${image}`));
    this.#signatures.forgetPool(name, subscribers);
    for (const image of checked) {
      const latest = await this.#signatures.want(`${name}/${image}`, {
        image,
        keys: trusted!.keys,
        retryMs: pollIntervalMs(pool, this.#o.planner),
        ...await credentials(secret),
      });
      if (latest) found.set(image, { at: latest.at, result: latest.result });
    }
    if (!policy) return {};
    const known = trusted && !trusted.pending && trusted.errors.length === 0;
    return {
      signatures: found,
      ...(trusted?.errors.length ? { keyErrors: trusted.errors } : {}),
      ...(known ? { hostKeys: trusted.keys.map((k) => k.pem) } : {}),
    };
  }

  /** The pool's trusted keys, its key Secrets read at most every {@linkcode KEY_SECRET_TTL_MS}. */
  async #trustedKeys(pool: BootcNodePool, now: Date): Promise<TrustedKeys> {
    const namespace = this.#o.namespace;
    const read = new Map<string, KeySecret>();
    for (const [n, m] of this.#keySecrets) {
      if (now.getTime() - m.at > 10 * KEY_SECRET_TTL_MS) this.#keySecrets.delete(n);
    }
    for (const secretName of keySecretNames(pool)) {
      const memo = this.#keySecrets.get(secretName);
      if (memo && now.getTime() - memo.at < KEY_SECRET_TTL_MS) {
        read.set(secretName, memo.secret);
        continue;
      }
      let secret: KeySecret;
      try {
        const got = await this.#o.client.resource<Secret>(Resources.secrets, namespace)
          .get(secretName);
        secret = { found: true, data: got.data as Record<string, string> | undefined };
      } catch (e) {
        if (!isNotFound(e)) {
          this.#o.logger.warn("cannot read a signature key Secret", {
            pool: pool.metadata.name,
            secret: secretName,
            error: e instanceof Error ? e.message : String(e),
          });
        }
        // A read that failed keeps the last answer; none yet: the keys are not known.
        secret = isNotFound(e)
          ? { found: false }
          : memo?.secret ?? { found: "unknown", why: e instanceof Error ? e.message : String(e) };
      }
      // A Secret found is kept a while; a missing one is read again next time, so creating
      // it lets the pool go on at once.
      if (secret.found === true) this.#keySecrets.set(secretName, { at: now.getTime(), secret });
      else if (secret.found === false) this.#keySecrets.delete(secretName);
      read.set(secretName, secret);
    }
    return trustedKeys(pool, namespace, read);
  }

  /**
   * The latest Prometheus health-check verdicts of the pool's nodes, never waiting
   * for Prometheus: the nodes holding the pool's reboot slot are polled by
   * {@linkcode HealthQueries}, every other key of the pool is dropped.
   */
  healthVerdicts(
    pool: BootcNodePool,
    nodes: readonly Node[],
  ): Map<string, QueryVerdict> | undefined {
    const name = pool.metadata.name ?? "";
    const check = pool.spec.rollout?.health?.prometheus;
    if (!check || pool.metadata.deletionTimestamp) {
      this.#healthQueries.forget(name);
      return undefined;
    }
    const wanted = new Map<string, PrometheusCheck>();
    for (const n of nodes) {
      if (n.metadata?.annotations?.[ANNOTATION_SLOT_POOL] === name) {
        wanted.set(n.metadata.name ?? "", check);
      }
    }
    return this.#healthQueries.wantOnly(name, wanted);
  }

  /**
   * The latest verdicts of the pool's object preconditions (`gates/objects.ts`), index by
   * index, never waiting for the API; undefined when the pool has none.
   */
  objectVerdicts(pool: BootcNodePool): (ObjectVerdict | undefined)[] | undefined {
    const name = pool.metadata.name ?? "";
    const checks = pool.spec.rollout?.preconditions?.objects ?? [];
    if (checks.length === 0 || pool.metadata.deletionTimestamp) {
      this.#objectChecks.forget(name);
      return undefined;
    }
    return this.#objectChecks.want(name, checks);
  }

  /**
   * The latest answer to the pool's alert precondition (`gates/alerts.ts`), never waiting
   * for Prometheus; undefined while none came (the gate then holds) or the pool has none.
   */
  alertsVerdict(pool: BootcNodePool): QueryVerdict | undefined {
    const name = pool.metadata.name ?? "";
    const spec = pool.spec.rollout?.preconditions?.alerts;
    if (!spec || pool.metadata.deletionTimestamp) {
      this.#alertQueries.forget(name);
      return undefined;
    }
    const check = { url: spec.url, query: alertsQuery(spec), forSeconds: 0 };
    return this.#alertQueries.wantOnly(name, new Map([["", check]])).get("");
  }
}

/** The credentials part of a poll's key: the Secret's hash and its dockerconfigjson. */
async function credentials(
  secret: PoolSecret,
): Promise<{ credentials?: { hash: string; dockerConfigJson?: string } }> {
  const hash = secret.hash ??
    (secret.dockerConfig === undefined
      ? undefined
      : await secretDataHash({ ".dockerconfigjson": secret.dockerConfig }));
  return hash === undefined ? {} : { credentials: { hash, dockerConfigJson: secret.dockerConfig } };
}
