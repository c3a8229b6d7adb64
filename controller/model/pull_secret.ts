/**
 * The controller's verdict on a pool's `pullSecretRef`, a pure function of the
 * reference, the operator's namespace and the Secret as read.
 *
 * One model, the same as the daemon's (lib/registry/pull_secret.ts): the Secret
 * must live in the operator's namespace (the only place the daemons may read
 * Secrets) and be of type `kubernetes.io/dockerconfigjson` with a
 * `.dockerconfigjson` key. Anything else can never work, so it is an
 * `InvalidSpec` naming the Secret and the problem, and nothing of it is used. A
 * Secret of the right kind with malformed content is `PullSecretInvalid`: the
 * pool is Degraded, its hash still reaches the BootcNodes (the daemons refuse
 * the content and keep the auth file they had), and the content is not used
 * for tag resolution.
 *
 * @module
 */
import { PoolDegradedReason } from "../../lib/api/mod.ts";
import { checkPullSecret, type SecretLike } from "../../lib/registry/pull_secret.ts";
import type { PoolIssue } from "../planner/pool_status.ts";

/** A pool's `spec.pullSecretRef`. */
export interface SecretReference {
  name: string;
  namespace: string;
}

/** What the shell found when it looked the Secret up. */
export type SecretLookup =
  /** The Secret exists (from the cache or a GET). */
  | { found: true; secret: SecretLike }
  /** No such Secret. */
  | { found: false };

/** The controller's verdict on a pool's pull Secret. */
export interface PullSecretVerdict {
  /**
   * True when the Secret is of the supported kind and its hash belongs in the
   * BootcNodes (and the daemons may read it), even if its content is malformed.
   */
  grant: boolean;
  /** The `.dockerconfigjson` text for tag resolution, when it is valid. */
  dockerConfigJson?: string;
  /** Why the pool is Degraded because of its pull Secret. */
  issue?: PoolIssue;
}

/** `namespace/name` of a reference. */
export function secretName(ref: SecretReference): string {
  return `${ref.namespace}/${ref.name}`;
}

/**
 * True when the reference can only be checked by looking the Secret up (it is
 * in the operator's namespace); a reference elsewhere is refused without a read.
 */
export function needsLookup(ref: SecretReference | undefined, namespace: string): boolean {
  return ref !== undefined && ref.namespace === namespace;
}

/** The verdict on `ref` (see the module documentation); `lookup` is ignored outside `namespace`. */
export function pullSecretVerdict(
  ref: SecretReference | undefined,
  namespace: string,
  lookup: SecretLookup,
): PullSecretVerdict {
  if (!ref) return { grant: false };
  const name = secretName(ref);
  const invalid = (message: string): PullSecretVerdict => ({
    grant: false,
    issue: { reason: PoolDegradedReason.InvalidSpec, message },
  });
  if (ref.namespace !== namespace) {
    return invalid(
      `pull secret ${name}: pull secrets must be in the operator's namespace ${namespace}, ` +
        "the only one whose Secrets the daemons may read",
    );
  }
  if (!lookup.found) return invalid(`pull secret ${name}: Secret not found`);
  const check = checkPullSecret(lookup.secret);
  if (check.ok) return { grant: true, dockerConfigJson: check.dockerConfigJson };
  const message = `pull secret ${name} ${check.message}`;
  if (check.problem === "content") {
    return { grant: true, issue: { reason: PoolDegradedReason.PullSecretInvalid, message } };
  }
  return invalid(message);
}
