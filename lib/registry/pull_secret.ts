/**
 * The one rule for pull Secrets, shared by the controller (which reports a bad
 * Secret on the pool) and the daemon (which refuses to install one on the
 * host): only Secrets of type `kubernetes.io/dockerconfigjson` are supported,
 * their `.dockerconfigjson` key must hold a JSON object with an `auths` object
 * (what kubelet and containers-image read), and every `auth` in it must be
 * base64 of `username:password`. The content is parsed by
 * {@linkcode parseDockerConfig}, the parser the registry client uses.
 *
 * @module
 */
import { InvalidDockerConfig, parseDockerConfig } from "./docker_config.ts";

/** The only Secret type pools may reference. */
export const DOCKER_CONFIG_SECRET_TYPE = "kubernetes.io/dockerconfigjson";
/** The key of a `kubernetes.io/dockerconfigjson` Secret. */
export const DOCKER_CONFIG_KEY = ".dockerconfigjson";

/** The parts of a Secret the check reads. */
export interface SecretLike {
  type?: string;
  /** Base64-encoded values, as the API serves them. */
  data?: { [key: string]: string };
}

/** Why a Secret is unusable: the Secret itself is the wrong kind, or its content is malformed. */
export type PullSecretProblem = "type" | "key" | "content";

/** Outcome of {@linkcode checkPullSecret}. */
export type PullSecretCheck =
  | { ok: true; dockerConfigJson: string }
  | {
    ok: false;
    problem: PullSecretProblem;
    /** A sentence fragment following the Secret's name, e.g. "has type Opaque; …". */
    message: string;
  };

function decodeBase64(value: string): string | undefined {
  try {
    const bin = atob(value);
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(bin, (c) => c.charCodeAt(0)),
    );
  } catch {
    return undefined;
  }
}

/**
 * Why a `.dockerconfigjson` text is malformed (undefined when it is fine): not
 * JSON, not an object, no `auths` object, an entry that is not an object, or an
 * `auth` that is not base64 of `username:password`.
 */
export function dockerConfigJsonProblem(text: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return `it is not JSON (${e instanceof Error ? e.message : e})`;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return "it is not a JSON object";
  }
  // parseDockerConfig also accepts the legacy .dockercfg shape (no "auths"), which a
  // kubernetes.io/dockerconfigjson Secret must not use: kubelet and bootc would ignore it.
  const auths = (json as Record<string, unknown>).auths;
  if (typeof auths !== "object" || auths === null || Array.isArray(auths)) {
    return 'it has no "auths" object';
  }
  try {
    parseDockerConfig(json);
  } catch (e) {
    // Keep only the problem: the caller names the Secret.
    return e instanceof InvalidDockerConfig
      ? e.problem
      : e instanceof Error
      ? e.message
      : String(e);
  }
  return undefined;
}

/** Checks a Secret against the rule in the module documentation. */
export function checkPullSecret(secret: SecretLike): PullSecretCheck {
  const type = secret.type || "Opaque";
  if (type !== DOCKER_CONFIG_SECRET_TYPE) {
    return {
      ok: false,
      problem: "type",
      message: `has type ${type}; only ${DOCKER_CONFIG_SECRET_TYPE} Secrets are supported`,
    };
  }
  const encoded = secret.data?.[DOCKER_CONFIG_KEY];
  if (encoded === undefined) {
    return { ok: false, problem: "key", message: `has no ${DOCKER_CONFIG_KEY} key` };
  }
  const text = decodeBase64(encoded);
  if (text === undefined) {
    return {
      ok: false,
      problem: "content",
      message: `is not a valid ${DOCKER_CONFIG_KEY}: it is not base64 of UTF-8 text`,
    };
  }
  const problem = dockerConfigJsonProblem(text);
  if (problem !== undefined) {
    return {
      ok: false,
      problem: "content",
      message: `is not a valid ${DOCKER_CONFIG_KEY}: ${problem}`,
    };
  }
  return { ok: true, dockerConfigJson: text };
}
