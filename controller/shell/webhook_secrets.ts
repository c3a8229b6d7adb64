/**
 * The one reader of webhook credential Secrets (hooks and the approval
 * webhook): a GET in the operator's namespace at each attempt (a rotated
 * Secret is used at once; the controller caches no Secret it need not), and
 * the opt-in rule of `webhook/client.ts` applied before anything is sent.
 *
 * @module
 */
import { isNotFound, type KubeClient, Resources } from "../../lib/kube/mod.ts";
import { webhookSecretProblem, type WebhookSecretReader } from "../webhook/client.ts";
import type { Secret } from "./object_views.ts";

/**
 * Reads Secrets of `namespace` for webhooks: undefined when not found, an error
 * naming the Secret when it may not be sent (see `webhookSecretProblem`) or cannot be read.
 */
export function webhookSecretReader(client: KubeClient, namespace: string): WebhookSecretReader {
  const secrets = client.resource<Secret>(Resources.secrets, namespace);
  return async (name) => {
    let secret: Secret;
    try {
      secret = await secrets.get(name);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw new Error(`Secret ${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const problem = webhookSecretProblem(secret);
    if (problem) throw new Error(problem);
    return (secret.data ?? {}) as Record<string, string>;
  };
}
