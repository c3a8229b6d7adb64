/**
 * The public keys a pool's signature policy trusts, from `spec.image.verification.keys`:
 * inline PEM, or a Secret in the operator's namespace that holds it. Pure: the shell reads
 * the Secrets and hands in what it found; this module says which keys result, and names the
 * field of each one that cannot be used (an InvalidSpec the pool reports).
 *
 * @module
 */
import type { BootcNodePool } from "../../lib/api/mod.ts";
import { parsePublicKey, type TrustedKey } from "../../lib/registry/signatures.ts";

/** The data key a `secretRef` reads when it names none. */
export const DEFAULT_KEY_DATA = "cosign.pub";

/** What reading one key Secret found: its data (base64, as the API serves it), or none. */
export type KeySecret =
  | { found: true; data?: Record<string, string> }
  | { found: false }
  /** It could not be read now (the API failed, `why`): the keys are not known yet. */
  | { found: "unknown"; why?: string };

/** The keys, or why some cannot be used. */
export interface TrustedKeys {
  keys: TrustedKey[];
  /** One per unusable key, naming its field (InvalidSpec). */
  errors: string[];
  /** Why a key Secret cannot be read now, if one cannot: no image can be checked meanwhile. */
  pending?: string;
}

/** The names of the Secrets the pool's keys are read from. */
export function keySecretNames(pool: BootcNodePool): string[] {
  const keys = pool.spec.image.verification?.keys ?? [];
  return [...new Set(keys.flatMap((k) => k.secretRef ? [k.secretRef.name] : []))];
}

/** The pool's trusted keys, with `secrets` the key Secrets as read (by name). */
export function trustedKeys(
  pool: BootcNodePool,
  namespace: string,
  secrets: ReadonlyMap<string, KeySecret>,
): TrustedKeys {
  const out: TrustedKeys = { keys: [], errors: [] };
  for (const [i, k] of (pool.spec.image.verification?.keys ?? []).entries()) {
    const name = `keys[${i}]`;
    if (k.pem !== undefined) {
      out.keys.push({ name, pem: k.pem });
      continue;
    }
    if (!k.secretRef) continue; // admission requires one of them
    const field = `spec.image.verification.${name}.secretRef`;
    const secret = secrets.get(k.secretRef.name) ?? { found: "unknown" as const };
    const where = `Secret ${namespace}/${k.secretRef.name}`;
    if (secret.found === "unknown") {
      out.pending = `${where} cannot be read${secret.why ? `: ${secret.why}` : ""}`;
      continue;
    }
    if (!secret.found) {
      out.errors.push(`${field}: ${where} not found`);
      continue;
    }
    const dataKey = k.secretRef.key ?? DEFAULT_KEY_DATA;
    const encoded = secret.data?.[dataKey];
    if (encoded === undefined) {
      out.errors.push(`${field}: ${where} has no key ${JSON.stringify(dataKey)}`);
      continue;
    }
    const pem = decode(encoded);
    const parsed = pem === undefined ? "is not base64" : parsePublicKey(pem);
    if (typeof parsed === "string") {
      out.errors.push(`${field}: ${where} key ${JSON.stringify(dataKey)}: ${parsed}`);
      continue;
    }
    out.keys.push({ name, pem: pem! });
  }
  return out;
}

function decode(base64: string): string | undefined {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}
