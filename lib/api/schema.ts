/**
 * The single source of truth for the `node.bootc.dev/v1alpha1` API: TypeBox
 * schemas that yield both the TypeScript types (via `Static`) and the CRDs'
 * `openAPIV3Schema` (see `crd.ts`, rendered into `crds/` by `deno task gen`).
 *
 * Validation that users should see at `kubectl apply` time is expressed as
 * CEL rules (`x-kubernetes-validations`) because they carry a readable message,
 * while a bare `pattern` only echoes a regular expression back.
 *
 * @module
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import {
  celIsLabelKey,
  celIsLabelValue,
  DNS1123_LABEL_PATTERN,
  DNS1123_SUBDOMAIN_PATTERN,
  LABEL_KEY_RULE,
  LABEL_VALUE_RULE,
  MAX_DNS1123_SUBDOMAIN_LENGTH,
  MAX_LABEL_KEY_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
} from "./validation.ts";
import {
  ApprovalModeValues,
  ApprovalScopeValues,
  ApprovalVerdictValues,
  HookPhaseValues,
  HookResultValues,
  LABEL_POOL,
  OnFailureValues,
  RevisionOutcome,
  RolloutOrderValues,
  RolloutStrategyValues,
} from "./constants.ts";
import { SlotLimitSource } from "./budget.ts";
import {
  celIsInstant,
  CRON_NICKNAMES,
  cronCelRules,
  DURATION_RULE,
  durationCelRule,
  instantCelRule,
  MAX_INSTANT_LENGTH,
  MAX_SCHEDULE_LENGTH,
  TIME_ZONE_RULE,
  timeZoneCelRule,
} from "./time_validation.ts";

/** Regular expression (RE2 and ECMAScript compatible) for a container image reference. */
export const IMAGE_REFERENCE_PATTERN = "^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?" +
  "(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?/)?" +
  "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*" +
  "(?::[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$";

/** Regular expression for a reference pinned by digest (`…@sha256:<64 hex>`). */
export const DIGEST_PINNED_PATTERN = "@sha256:[a-f0-9]{64}$";

/** Regular expression for a bare digest (`sha256:<64 hex>`). */
export const DIGEST_PATTERN = "^sha256:[a-f0-9]{64}$";

/** A CEL validation rule with the message the API server returns when it fails. */
export interface ValidationRule {
  rule: string;
  /** Shown when the rule fails (and when `messageExpression` cannot be evaluated). */
  message: string;
  /** A CEL string expression for a message that names the offending value. */
  messageExpression?: string;
  /** Where the error is reported, relative to the schema the rule is on. */
  fieldPath?: string;
}

function validations(...rules: ValidationRule[]): { "x-kubernetes-validations": ValidationRule[] } {
  return { "x-kubernetes-validations": rules };
}

/** A string schema restricted to `values`, rendered as an OpenAPI `enum`. */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: Record<string, unknown> = {},
) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
}

const ImageRef = Type.String({
  minLength: 1,
  maxLength: 512,
  description: "A container image reference: a tag (quay.io/org/os:v2), a digest " +
    "(quay.io/org/os@sha256:…) or both. A tag is resolved to a digest by polling the registry.",
  ...validations({
    rule: `self.matches(r'${IMAGE_REFERENCE_PATTERN}')`,
    message: "must be a container image reference such as quay.io/example/os:latest or " +
      "quay.io/example/os@sha256:<64 hex digits> (lowercase repository, optional :tag and @digest)",
  }),
});

/** A CEL string literal (double-quoted) for `text`, which holds no `"` or `\\`. */
function celString(text: string): string {
  return `"${text}"`;
}

const SecretReference = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: MAX_DNS1123_SUBDOMAIN_LENGTH,
    description: "Secret name.",
    ...validations({
      rule: `self.matches(r'${DNS1123_SUBDOMAIN_PATTERN}')`,
      message: "must be a valid Secret name: a DNS subdomain of lowercase letters, digits, " +
        "'-' and '.', starting and ending with a letter or digit",
    }),
  }),
  namespace: Type.String({
    minLength: 1,
    maxLength: MAX_LABEL_VALUE_LENGTH,
    description: "Secret namespace: the operator's namespace (bootc-operator unless installed " +
      "elsewhere).",
    ...validations({
      rule: `self.matches(r'${DNS1123_LABEL_PATTERN}')`,
      message: "must be a valid namespace name: at most 63 lowercase letters, digits and '-', " +
        "starting and ending with a letter or digit",
    }),
  }),
}, {
  description: "Registry credentials: a Secret of type kubernetes.io/dockerconfigjson in the " +
    "operator's namespace (the only namespace the daemons can read).",
});

/** Most per-node approval verdicts `status.approval.nodes` keeps. */
export const MAX_APPROVAL_NODES = 512;

/** Most bytes of a webhook endpoint's CA bundle (PEM). */
export const MAX_CA_BUNDLE_LENGTH = 65536;

/**
 * An HTTP(S) endpoint the controller calls (hooks, the approval webhook): the
 * URL, a per-attempt timeout, an optional CA bundle (TLS is always verified)
 * and an optional Secret in the operator's namespace with a bearer token
 * (`token`) or a client certificate (`tls.crt`, `tls.key`) and `ca.crt`.
 */
export const WebhookEndpointSpec = Type.Object({
  url: Type.String({
    minLength: 1,
    maxLength: 2048,
    description: "The http:// or https:// URL the controller POSTs to.",
    ...validations({
      rule: "self.matches(r'^https?://[^/?#@\\s]+([/?#]\\S*)?$')",
      message: "must be an absolute http:// or https:// URL with a host and no credentials, " +
        "e.g. https://hooks.example.com/bootc",
    }),
  }),
  timeoutSeconds: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 300,
    default: 10,
    description: "How long one attempt may take (connect, send, read the reply).",
  })),
  caBundle: Type.Optional(Type.String({
    minLength: 1,
    maxLength: MAX_CA_BUNDLE_LENGTH,
    description: "PEM CA certificates trusted for the endpoint, in addition to the system " +
      "roots. TLS is always verified.",
    ...validations({
      rule: "self.contains('-----BEGIN CERTIFICATE-----')",
      message: "must be PEM: one or more -----BEGIN CERTIFICATE----- blocks",
    }),
  })),
  secretRef: Type.Optional(Type.Object({
    name: SecretReference.properties.name,
  }, {
    description: "A Secret in the operator's namespace, labelled bootc.dev/webhook-credentials: " +
      '"true": `token` (sent as a bearer token), `tls.crt` and `tls.key` (a client ' +
      "certificate), `ca.crt` (added to caBundle). Needs an https:// url.",
  })),
});

/** {@linkcode WebhookEndpointSpec}'s fields, to spread into an object that adds its own. */
export const webhookEndpointFields = WebhookEndpointSpec.properties;

/** The rule every object spreading {@linkcode webhookEndpointFields} carries: no credentials in the clear. */
const WEBHOOK_CREDENTIALS_NEED_TLS = {
  rule: "!has(self.secretRef) || self.url.startsWith('https://')",
  message: "a secretRef (bearer token, client certificate) needs an https:// url: credentials " +
    "are never sent in the clear",
};

/** Most hooks a pool may have. */
export const MAX_HOOKS = 8;

/** One of `spec.hooks`: an endpoint notified (CloudEvents, structured mode) on some phases. */
export const HookSpec = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: MAX_LABEL_VALUE_LENGTH,
    description: "The hook's name (unique in the pool; status.hooks reports under it).",
    ...validations({
      rule: `self.matches(r'${DNS1123_LABEL_PATTERN}')`,
      message: "must be at most 63 lowercase letters, digits and '-', starting and ending " +
        "with a letter or digit",
    }),
  }),
  phases: Type.Optional(Type.Array(StringEnum(HookPhaseValues), {
    minItems: 1,
    maxItems: HookPhaseValues.length,
    description: "The phases the hook is called on. Unset: all of them.",
    "x-kubernetes-list-type": "set",
  })),
  ...webhookEndpointFields,
  maxAttempts: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 20,
    default: 5,
    description: "Attempts per delivery (exponential back-off with jitter between them); a " +
      "delivery still failing after them is recorded as Failed. A hook never blocks a rollout.",
  })),
}, {
  description: "An HTTP(S) endpoint the controller POSTs a CloudEvent to on the chosen phases.",
  ...validations(WEBHOOK_CREDENTIALS_NEED_TLS),
});

/** Most `matchLabels` entries a selector may have (bounds the CEL validation cost). */
export const MAX_MATCH_LABELS = 64;
/** Most `matchExpressions` a selector may have (bounds the CEL validation cost). */
export const MAX_MATCH_EXPRESSIONS = 64;
/** Most values one `matchExpressions` entry may list (bounds the CEL validation cost). */
export const MAX_SELECTOR_VALUES = 128;

const LabelValue = Type.String({
  maxLength: MAX_LABEL_VALUE_LENGTH,
  ...validations({
    rule: celIsLabelValue("self"),
    message: `must be a valid label value: ${LABEL_VALUE_RULE}`,
  }),
});

/** Values of a `matchExpressions` operator. */
export const SelectorOperatorValues = ["In", "NotIn", "Exists", "DoesNotExist"] as const;

const LabelSelectorRequirement = Type.Object({
  key: Type.String({
    minLength: 1,
    maxLength: MAX_LABEL_KEY_LENGTH,
    description: "The node label the requirement applies to.",
    ...validations({
      rule: celIsLabelKey("self"),
      message: `must be a valid label key: ${LABEL_KEY_RULE}`,
    }),
  }),
  operator: StringEnum(SelectorOperatorValues, {
    description: "In and NotIn need a non-empty values list; Exists and DoesNotExist take none.",
  }),
  values: Type.Optional(Type.Array(LabelValue, {
    maxItems: MAX_SELECTOR_VALUES,
    description: "Label values for In and NotIn.",
  })),
}, {
  ...validations({
    rule: "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
    message: "operator In and NotIn require at least one value",
    fieldPath: ".values",
    messageExpression: "'operator ' + self.operator + ' requires at least one value'",
  }, {
    rule: "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || " +
      "size(self.values) == 0",
    message: "operators Exists and DoesNotExist must not have values",
    fieldPath: ".values",
    messageExpression: "'operator ' + self.operator + ' must not have values'",
  }),
});

const LabelSelector = Type.Object({
  matchLabels: Type.Optional(Type.Record(Type.String(), LabelValue, {
    maxProperties: MAX_MATCH_LABELS,
    description: "Node labels that must all be present with exactly these values.",
    ...validations({
      rule: `self.all(k, ${celIsLabelKey("k")})`,
      // No messageExpression naming the bad keys: map keys have no length bound, so the API
      // server would estimate a filter+join far over its cost budget and refuse the CRD.
      message: `keys must be valid label keys: ${LABEL_KEY_RULE}`,
      messageExpression: celString("key ") +
        ` + '"' + self.filter(k, !(${celIsLabelKey("k")}))[0] + '"' + ` +
        celString(` is not a valid label key: ${LABEL_KEY_RULE}`),
    }),
  })),
  matchExpressions: Type.Optional(Type.Array(LabelSelectorRequirement, {
    maxItems: MAX_MATCH_EXPRESSIONS,
    description: "Requirements on node labels that must all hold.",
  })),
}, {
  description: "Selects the Nodes of this pool. An empty selector matches every node.",
  "x-kubernetes-map-type": "atomic",
});

/** Status of a condition, as in metav1.Condition. */
export const ConditionStatusValues = ["True", "False", "Unknown"] as const;

/** A condition in the shape of metav1.Condition. */
export const Condition = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 316 }),
  status: StringEnum(ConditionStatusValues),
  reason: Type.String({ maxLength: 1024 }),
  message: Type.String({ maxLength: 32768 }),
  lastTransitionTime: Type.String({ format: "date-time" }),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
});

const Conditions = Type.Array(Condition, {
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
});

/** `maxUnavailable`: an integer ≥ 1 or a percentage from 1% to 100%. */
const MaxUnavailable = Type.Unsafe<number | string>({
  "x-kubernetes-int-or-string": true,
  default: 1,
  description:
    "How many nodes may be in a reboot slot (cordoned, draining or rebooting) at once: " +
    "an integer >= 1 or a percentage of the pool's nodes, rounded up (at least 1).",
  ...validations({
    rule: "type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",
    message: 'must be an integer >= 1 or a percentage from 1% to 100% (for example 1, 3 or "25%")',
  }),
});

/** An integer or a percentage with a minimum (0 or 1); rounded up against a node count. */
function intOrPercent(minimum: 0 | 1, description: string, extra: Record<string, unknown> = {}) {
  const pct = minimum === 0 ? "^(100|[1-9]?[0-9])%$" : "^(100|[1-9][0-9]?)%$";
  return Type.Unsafe<number | string>({
    "x-kubernetes-int-or-string": true,
    // Bounds the CEL cost of the percentage match (it applies to the string form only).
    maxLength: 4,
    description,
    ...extra,
    ...validations({
      rule: `type(self) == int ? self >= ${minimum} : self.matches('${pct}')`,
      message: `must be an integer >= ${minimum} or a percentage from ${minimum}% to 100% ` +
        `(for example ${minimum === 0 ? "0, 2" : "1, 3"} or "25%")`,
    }),
  });
}

/**
 * A cron schedule: five fields or a nickname, every field's range, steps and ranges checked
 * here, and days and months that never meet (30 February); see `time_validation.ts`.
 */
const CronSchedule = Type.String({
  minLength: 1,
  maxLength: MAX_SCHEDULE_LENGTH,
  description: "A cron expression with five fields: minute hour day-of-month month day-of-week, " +
    'in the pool\'s timeZone (for example "0 22 * * 6" for Saturdays at 22:00), or one of ' +
    `${CRON_NICKNAMES.join(", ")}.`,
  ...validations(...cronCelRules()),
});

/** A Go-style duration from 1s to 87600h, such as "8h", "90m", "1.5h" or "1h30m0s". */
const Duration = Type.String({
  minLength: 2,
  maxLength: 32,
  description: `How long, as a duration: ${DURATION_RULE}.`,
  ...validations(durationCelRule()),
});

/** An IANA time zone name, looked up in the API server's zone database. */
const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: `An IANA time zone: ${TIME_ZONE_RULE}.`,
  ...validations(timeZoneCelRule()),
});

/**
 * An RFC 3339 instant with Z or an offset (blackouts). Not `format: date-time`: that takes
 * offsets such as +99:59, and CEL would see a timestamp, not the text the rule checks.
 */
function Instant(description: string) {
  return Type.String({
    minLength: 1,
    maxLength: MAX_INSTANT_LENGTH,
    description,
    ...validations(instantCelRule()),
  });
}

/** Values of `spec.disruption.rebootPolicy`. */
export const RebootPolicyValues = ["RebootOnly", "AllowSoftReboot"] as const;
/** `spec.deletionPolicy.mode` values. */
export const DeletionModeValues = ["Release", "RollForward", "RollBack", "Threshold"] as const;
/** Where a deleted pool's nodes end before they are handed back. */
export type DeletionMode = typeof DeletionModeValues[number];
/** `status.deletion.direction`: the image a deleted pool finishes on. */
export const DeletionDirectionValues = ["Forward", "Back"] as const;
/** How a node may restart into a new image. */
export type RebootPolicy = typeof RebootPolicyValues[number];

/** Values of `BootcNode.spec.desiredImageState`. */
export const DesiredImageStateValues = ["Staged", "Booted"] as const;
/** Whether the daemon should only stage the desired image or also boot it. */
export type DesiredImageState = typeof DesiredImageStateValues[number];

/** Values of `spec.image.channel.preRelease`. */
export const PreReleaseValues = ["Exclude", "Include"] as const;

const Channel = Type.Object({
  repository: Type.String({
    minLength: 1,
    maxLength: 512,
    description: "The repository whose tags are followed, without tag or digest " +
      "(quay.io/example/os).",
    ...validations({
      rule: `self.matches(r'${IMAGE_REFERENCE_PATTERN}') && self.matches(r'^([^@]*/)?[^/:@]+$')`,
      message: "must be a repository without tag or digest, such as quay.io/example/os",
    }),
  }),
  constraint: Type.String({
    minLength: 1,
    maxLength: 256,
    description: 'A semver range of versions to follow, e.g. "~1.4" (1.4.x), ">=1.2 <2" or ' +
      '"^2"; tags with or without a "v" prefix count; tags that are not versions (latest, ' +
      "sha-…) are ignored.",
  }),
  schedule: Type.Optional(Type.String({
    ...CronSchedule,
    description: "When to look for a newer version: a cron expression in the pool's timeZone " +
      '(e.g. "0 22 * * 6", Saturdays 22:00). Unset: every pollIntervalSeconds.',
  })),
  preRelease: Type.Optional(StringEnum(PreReleaseValues, {
    default: "Exclude",
    description: "Include: pre-release versions (1.5.0-rc.1) inside the range may be chosen.",
  })),
}, {
  description: "Follow the highest version of a repository inside a semver range, checked on " +
    "a schedule; versions that failed their health checks are never chosen again.",
});

/** Most units a pool's health check may list. */
export const MAX_HEALTH_UNITS = 32;

/** Values of `spec.rollout.health.bootAssessment`. */
export const BootAssessmentValues = ["Ignore", "Require"] as const;

const HealthSpec = Type.Object({
  timeoutSeconds: Type.Optional(Type.Integer({
    minimum: 1,
    default: 600,
    description: "How long a node that is back, Ready and running the target may take to " +
      "pass every health check before it counts as failed.",
  })),
  units: Type.Optional(Type.Array(
    Type.String({
      minLength: 1,
      maxLength: 256,
      ...validations({
        rule: "self.matches(r'^[A-Za-z0-9:_.@\\\\-]+$')",
        message: "must be a systemd unit name such as kubelet.service",
      }),
    }),
    {
      maxItems: MAX_HEALTH_UNITS,
      description: "systemd units that must be active on the host. Unset: " +
        "`systemctl is-system-running` must say running.",
    },
  )),
  bootAssessment: Type.Optional(StringEnum(BootAssessmentValues, {
    description: "Require: the boot must pass systemd's Automatic Boot Assessment: " +
      "boot-complete.target reached (greenboot and other checks order themselves before " +
      "it), and the boot loader entry not marked bad (systemd-bless-boot status). " +
      "Unset or Ignore: not read.",
  })),
  podSelector: Type.Optional(Type.Object({
    matchLabels: LabelSelector.properties.matchLabels,
    matchExpressions: LabelSelector.properties.matchExpressions,
  }, {
    description: "Pods on the node matching this selector (any namespace) must be Ready, " +
      "for example the CNI and storage DaemonSets.",
    "x-kubernetes-map-type": "atomic",
  })),
  prometheus: Type.Optional(Type.Object({
    url: Type.String({
      minLength: 1,
      maxLength: 512,
      description: "Base URL of the Prometheus HTTP API, e.g. http://prometheus.monitoring:9090.",
      ...validations({
        rule: "self.startsWith('http://') || self.startsWith('https://')",
        message: "must be an http:// or https:// URL",
      }),
    }),
    query: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: "PromQL that must return an empty result; $node is replaced with the " +
        "node's name.",
    }),
    forSeconds: Type.Optional(Type.Integer({
      minimum: 0,
      default: 60,
      description: "How long the result must stay empty.",
    })),
  })),
}, {
  description: "When a node that rebooted into the target counts as verified: Ready, " +
    "running the target, host healthy, and the optional pod and Prometheus checks.",
});

/** Values of `spec.rollout.preconditions.alerts.onUnreachable`. */
export const OnUnreachableValues = ["Hold", "Proceed"] as const;

/** `spec.rollout.preconditions.alerts`: no new reboot slot while matching alerts fire. */
export const PrometheusAlertsPrecondition = Type.Object({
  url: Type.String({
    minLength: 1,
    maxLength: 512,
    description: "Base URL of the Prometheus HTTP API, e.g. http://prometheus.monitoring:9090.",
    ...validations({
      rule: "self.startsWith('http://') || self.startsWith('https://')",
      message: "must be an http:// or https:// URL",
    }),
  }),
  alertname: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 512,
    description: "A regular expression (RE2, anchored, as PromQL's =~) the alert's name must " +
      "match. Unset: any alert.",
  })),
  matchLabels: Type.Optional(Type.Record(
    Type.String(),
    Type.String({ maxLength: 256 }),
    {
      maxProperties: 16,
      description: "Labels the alert must carry with exactly these values, e.g. severity: " +
        "critical.",
      ...validations({
        rule: "self.all(k, k.matches('^[a-zA-Z_][a-zA-Z0-9_]*$') && k != 'alertname' && " +
          "k != 'alertstate')",
        message: "keys must be Prometheus label names other than alertname and alertstate",
      }),
    },
  )),
  onUnreachable: Type.Optional(StringEnum(OnUnreachableValues, {
    default: "Hold",
    description: "When Prometheus cannot be asked: Hold (no new slot, fail closed) or " +
      "Proceed (slots as if no alert fired, fail open). Either is said in UpToDate.",
  })),
}, {
  description: "Hold new reboot slots while any firing alert in Prometheus matches " +
    '(ALERTS{alertstate="firing"}, checked every few seconds).',
});

/** Most `spec.rollout.preconditions.objects` entries. */
export const MAX_OBJECT_PRECONDITIONS = 8;

/** One of `spec.rollout.preconditions.objects`: a CEL check over selected objects. */
export const ObjectPrecondition = Type.Object({
  apiVersion: Type.String({
    minLength: 1,
    maxLength: 253,
    description: "The objects' apiVersion, e.g. ceph.rook.io/v1 or v1.",
  }),
  kind: Type.String({
    minLength: 1,
    maxLength: 63,
    description: "The objects' kind, e.g. CephCluster.",
  }),
  namespace: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 63,
    description: "Their namespace. Unset: every namespace (or a cluster-scoped kind).",
  })),
  name: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 253,
    description: "One object by name. Unset: every object matchLabels selects.",
  })),
  matchLabels: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 63 }), {
    maxProperties: 16,
    description: "Labels the objects must carry (with no name).",
  })),
  expression: Type.String({
    minLength: 1,
    maxLength: 2048,
    description: "A CEL expression, true while reboots may go on, evaluated for each " +
      'selected object as `object`, e.g. object.status.ceph.health == "HEALTH_OK". ' +
      "Selecting no object, false, or an error holds new reboot slots.",
  }),
}, {
  description: "Objects whose state must allow reboots. The controller needs get and list " +
    "on the kind: add them to a ClusterRole bound to its ServiceAccount.",
  ...validations({
    rule: "!(has(self.name) && has(self.matchLabels))",
    message: "set name or matchLabels, not both",
  }),
});

/** Values of `spec.rollout.drain.onTimeout`. */
export const DrainOnTimeoutValues = ["Degrade", "Force"] as const;

/**
 * How a pool drains its nodes (`spec.rollout.drain`). Mirror, DaemonSet and
 * completed pods are always left alone, as before.
 */
export const DrainPolicySpec = Type.Object({
  podSelector: Type.Optional(Type.Object({
    matchLabels: LabelSelector.properties.matchLabels,
    matchExpressions: LabelSelector.properties.matchExpressions,
  }, {
    description: "Pods to LEAVE ALONE: pods matching this selector (any namespace) are " +
      "never evicted or deleted and stay Running through the drain and the reboot (for " +
      "example Longhorn's instance managers and CSI attacher). This is the opposite of " +
      "`kubectl drain --pod-selector`, which selects the pods to evict.",
    "x-kubernetes-map-type": "atomic",
    ...validations({
      rule: "(has(self.matchLabels) && size(self.matchLabels) > 0) || " +
        "(has(self.matchExpressions) && size(self.matchExpressions) > 0)",
      message: "podSelector selects the pods the drain leaves alone; an empty selector " +
        "would leave every pod in place, so give matchLabels or matchExpressions",
    }),
  })),
  gracePeriodSeconds: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 86400,
    description: "Grace period sent with each eviction (DeleteOptions.gracePeriodSeconds); " +
      "a pod whose own terminationGracePeriodSeconds is shorter keeps its own. Unset: " +
      "each pod's own. At least 1 (0 would remove pods without waiting for them to stop).",
  })),
  deleteEmptyDirData: Type.Optional(Type.Boolean({
    default: false,
    description: "As `kubectl drain --delete-emptydir-data`: false refuses to evict pods " +
      "with emptyDir volumes (their data is lost), and the drain waits naming them in the " +
      "node's Drained condition and the pool's message; true evicts them.",
  })),
  skipWaitForDeleteTimeoutSeconds: Type.Optional(Type.Integer({
    minimum: 1,
    description: "As `kubectl drain --skip-wait-for-delete-timeout`, for a node that is " +
      "NotReady: a pod deleted more than this many seconds ago is no longer waited for " +
      "(its kubelet may be gone). Unset: every terminating pod is waited for.",
  })),
  waitForVolumeDetach: Type.Optional(Type.Boolean({
    default: false,
    description: "The drain finishes only once no VolumeAttachment for the node remains " +
      "(its CSI volumes detached), except those of pods the drain leaves alone, so a " +
      "reboot never cuts a volume off mid-detach (Multi-Attach errors, replica rebuilds). " +
      "Bounded by drainTimeoutSeconds: then the node is degraded naming the attachment " +
      "(onTimeout: Force cannot detach a volume).",
  })),
  onTimeout: Type.Optional(StringEnum(DrainOnTimeoutValues, {
    default: "Degrade",
    description: "At drainTimeoutSeconds. Degrade: the node stays cordoned and degraded, " +
      "naming what blocks its drain. Force: pods are still evicted, and those a " +
      "PodDisruptionBudget allowing no disruption keeps are DELETED, overriding it, " +
      "with a Warning event per pod naming it and the budget; then the drain completes. " +
      "Pods refused by this policy (emptyDir, podSelector) are never force-deleted; " +
      "they, or pods still not removed a minute after the timeout, degrade the node.",
  })),
}, {
  description: "How nodes are drained before a reboot: pods left alone, grace period, " +
    "emptyDir pods, terminating pods on NotReady nodes, detached volumes, and what " +
    "happens at the drain timeout.",
});

/** How signatures are enforced: `spec.image.verification.mode`. */
export const VerificationModeValues = ["Enforce", "Audit"] as const;

const ImageVerification = Type.Object({
  mode: StringEnum(VerificationModeValues, {
    description: "Enforce: an image becomes the pool's target only once its cosign signature " +
      "verifies with one of the keys; until then the pool stays on its current image and says " +
      "SignatureInvalid. Audit: the verdict is reported in status.verification and a Warning " +
      "event, and the image rolls out anyway.",
  }),
  keys: Type.Array(
    Type.Object({
      pem: Type.Optional(Type.String({
        minLength: 1,
        maxLength: 16384,
        description: "A cosign public key in PEM (the cosign.pub of `cosign generate-key-pair`): " +
          "ECDSA, RSA or Ed25519.",
        ...validations({
          rule: "self.contains('-----BEGIN PUBLIC KEY-----') && " +
            "self.contains('-----END PUBLIC KEY-----')",
          message: "must be a PEM public key (-----BEGIN PUBLIC KEY----- ... " +
            "-----END PUBLIC KEY-----)",
        }),
      })),
      secretRef: Type.Optional(Type.Object({
        name: SecretReference.properties.name,
        key: Type.Optional(Type.String({
          minLength: 1,
          maxLength: 253,
          default: "cosign.pub",
          description: "The data key holding the PEM public key.",
        })),
      }, {
        description: "A Secret in the operator's namespace holding the public key (read again " +
          "at most every 30 seconds, so a rotated key takes effect on its own).",
      })),
    }, {
      ...validations({
        rule: "has(self.pem) != has(self.secretRef)",
        message: "set exactly one of pem (the key inline) and secretRef (a Secret holding it)",
      }),
    }),
    {
      minItems: 1,
      maxItems: 16,
      description: "The trusted public keys: an image verifies when any of them verifies its " +
        "signature.",
    },
  ),
}, {
  description: "Cosign signature verification of the pool's images (the sha256-<digest>.sig " +
    "tag scheme). For an image index, the index and every platform manifest must verify.",
});

/** BootcNodePool spec. */
export const BootcNodePoolSpec = Type.Object({
  nodeSelector: LabelSelector,
  image: Type.Object({
    ref: Type.Optional(ImageRef),
    pollIntervalSeconds: Type.Optional(Type.Integer({
      minimum: 10,
      description: "How often a tag is re-resolved against the registry (and, for a channel " +
        "without a schedule, how often its tags are listed). Defaults to the controller's " +
        "--registry-poll-interval.",
    })),
    channel: Type.Optional(Channel),
    verification: Type.Optional(ImageVerification),
  }, {
    ...validations({
      rule: "has(self.ref) != has(self.channel)",
      message: "set exactly one of ref (a fixed image) and channel (follow a semver range)",
    }),
  }),
  rollout: Type.Object({
    maxUnavailable: MaxUnavailable,
    strategy: Type.Optional(StringEnum(RolloutStrategyValues, {
      default: "RollingUpdate",
      description: "Who reboots the nodes. RollingUpdate: the operator (reboot slots, " +
        "cordon, drain, reboot). External: another orchestrator (such as OpenShift's " +
        "MCO) cordons, drains and reboots; the operator resolves the image, stages it on " +
        "every node and reports, and never cordons, drains, grants a slot or asks for a " +
        "reboot (nodes already in a slot finish). Back to RollingUpdate, the operator " +
        "takes the staged nodes over.",
    })),
    paused: Type.Boolean({
      default: false,
      description: "When true no node gets a new reboot slot; staging goes on.",
    }),
    drainTimeoutSeconds: Type.Integer({
      minimum: 1,
      default: 600,
      description: "How long a drain may take; then `drain.onTimeout` applies (by " +
        "default the node is marked degraded).",
    }),
    drain: Type.Optional(DrainPolicySpec),
    rebootTimeoutSeconds: Type.Integer({
      minimum: 1,
      default: 1800,
      description: "How long a node may take from the reboot request to running the target " +
        "image and being Ready before it is reported as not coming back (counts toward the halt rule).",
    }),
    minReadySeconds: Type.Integer({
      minimum: 0,
      default: 0,
      description: "How long a rebooted node must be Ready before its slot is freed.",
    }),
    minNodeReadySeconds: Type.Optional(Type.Integer({
      minimum: 0,
      maximum: 86400,
      description: "How long a node must have been Ready before it gets a reboot slot, so a " +
        "node that keeps flapping is not taken down; other nodes go ahead meanwhile. 0 or " +
        "unset: no wait.",
    })),
    // Optional in the type (objects built in code may leave them out; the API server
    // fills the defaults in), unlike the older fields above.
    stagingTimeoutSeconds: Type.Optional(Type.Integer({
      minimum: 1,
      default: 1800,
      description: "How long a node may take to stage the desired image (download it and " +
        "prepare the deployment) before it is reported Stalled with reason StagingTimeout.",
    })),
    daemonReportTimeoutSeconds: Type.Optional(Type.Integer({
      minimum: 1,
      default: 300,
      description: "How long the controller waits for a node's daemon to report on a new " +
        "spec before the node is reported Stalled with reason DaemonNotReporting (at least " +
        "30: a daemon reports a pull once it has run 5 seconds; less counts as 30).",
    })),
    progressTimeoutSeconds: Type.Optional(Type.Integer({
      minimum: 1,
      default: 600,
      description: "How long a node may wait on unchanged facts (its BootcNode's conditions, " +
        "its Node's record and Ready) for its daemon, the controller or its Node, where no " +
        "other deadline applies (staging, drain, reboot, health checks), before it is " +
        "reported Stalled with reason NoProgress naming what it waits for. Waits on a " +
        "rollout gate (budget, window, pause, staging limit) or on a person are not stalls. " +
        "An approval webhook failing every attempt for this long makes the pool Degraded " +
        "(ApprovalWebhookFailing).",
    })),
    budgets: Type.Optional(Type.Array(
      Type.Object({
        maxUnavailable: intOrPercent(
          0,
          "Nodes that may be disrupted while this budget is active: an integer >= 0 or a " +
            "percentage of the pool (rounded up); 0 means no new reboots.",
        ),
        schedule: Type.Optional(CronSchedule),
        duration: Type.Optional(Duration),
      }, {
        description: "A budget active from each start of `schedule` for `duration` (always, " +
          "without a schedule). The most restrictive active budget and maxUnavailable win.",
        ...validations({
          rule: "has(self.schedule) == has(self.duration)",
          message: "schedule and duration must be set together",
        }),
      }),
      {
        maxItems: 16,
        description: "Scheduled disruption budgets (as Karpenter's NodePool budgets): for " +
          'example 1 during business hours and "20%" at night.',
      },
    )),
    order: Type.Optional(StringEnum(RolloutOrderValues, {
      default: "Default",
      description: "The order reboot slots go to the pool's staged nodes (one still " +
        "downloading does not hold the others back), after each Node's " +
        "bootc.dev/update-priority annotation (higher first, unset 1, 0 skips the node) and " +
        "before the node name. Default: by name. ZoneByZone: by the " +
        "topology.kubernetes.io/zone label, zone by zone. OldestFirst / NewestFirst: by the " +
        "Node's creation time. The node the acting controller runs on always goes last.",
    })),
    preconditions: Type.Optional(Type.Object({
      alerts: Type.Optional(PrometheusAlertsPrecondition),
      objects: Type.Optional(Type.Array(ObjectPrecondition, {
        maxItems: MAX_OBJECT_PRECONDITIONS,
        description: "CEL checks over cluster objects (a storage cluster's health, say): " +
          "every one must pass before each new reboot slot.",
      })),
    }, {
      description: "Checks of the whole cluster before each reboot slot is granted: while one " +
        "fails no new slot is given (nodes in flight finish).",
    })),
    blockingPodSelector: Type.Optional(Type.Object(LabelSelector.properties, {
      description: "A node running a pod these labels select (in any namespace, in any phase " +
        "but Succeeded or Failed) gets no reboot slot and is not cordoned; the pool's other " +
        "nodes go ahead meanwhile. Its status.queue entry says BlockingPod and names the pod.",
    })),
    maxUnhealthy: Type.Optional(intOrPercent(
      1,
      "The rollout halts (no new reboot slot, Degraded/RolloutHalted) while this many nodes " +
        "in reboot slots are unhealthy at once: Degraded, not Ready before their reboot, or " +
        "past their drain or reboot timeout (an integer >= 1 or a percentage of the pool's " +
        "nodes, rounded up). Unset: 2.",
    )),
    maxStaging: Type.Optional(intOrPercent(
      1,
      "At most this many of the pool's nodes download a new image at once (an integer >= 1 " +
        "or a percentage, rounded up); the rest queue. Unset: all at once.",
    )),
    after: Type.Optional(Type.Array(
      Type.String({ minLength: 1, maxLength: 63 }),
      {
        maxItems: 16,
        description: "Pools that must finish their current rollout (all nodes updated, " +
          "healthy) before this pool starts reboots.",
      },
    )),
    health: Type.Optional(HealthSpec),
    onFailure: Type.Optional(StringEnum(OnFailureValues, {
      default: "Halt",
      description: "What happens when a node fails its health checks after rebooting into " +
        "the target. Halt: the node keeps its slot and the rollout halts (no other node " +
        "gets a slot for that image while the failure stands). RollbackNode: the node is rolled back to its previous " +
        "deployment (bootc rollback, through the same slot and drain), is not retried on " +
        "that image, and the rollout halts. RollbackPool: the pool goes back to its last " +
        "good image on every node, records the image as failed and never chooses it " +
        "again automatically.",
    })),
    canary: Type.Optional(Type.Object({
      nodes: intOrPercent(
        1,
        "How many nodes are updated first, alone: an integer >= 1 or a percentage of the " +
          "pool (rounded up).",
      ),
      soakSeconds: Type.Optional(Type.Integer({
        minimum: 0,
        default: 0,
        description: "How long the canary nodes must stay healthy after the last of them " +
          "is verified and released before the rest of the pool proceeds (at least this " +
          "long: the end is rounded up to the whole second).",
      })),
      notReadyGraceSeconds: Type.Optional(Type.Integer({
        minimum: 0,
        default: 0,
        description: "How long a canary node may be NotReady during the soak before the " +
          "canary fails; at most soakSeconds. 0: NotReady at any moment of the soak fails " +
          "it. The soak never passes while a canary node is NotReady: one NotReady at the " +
          "soak's end extends it to the end of its grace (Ready by then passes, else fails).",
      })),
    }, {
      description: "Each new target is first rolled out to a canary batch, which must " +
        "pass its health checks and soak before the rest proceeds at maxUnavailable.",
      ...validations({
        rule: "!has(self.notReadyGraceSeconds) || self.notReadyGraceSeconds <= " +
          "(has(self.soakSeconds) ? self.soakSeconds : 0)",
        message: "notReadyGraceSeconds must not be longer than soakSeconds",
      }),
    })),
    maxRollbacks: Type.Optional(Type.Integer({
      minimum: 1,
      default: 3,
      description: "After this many consecutive failed rollouts the circuit opens: no " +
        "automatic change (new target or rollback) until a user resets it with the " +
        "bootc.dev/reset-circuit-breaker annotation.",
    })),
    approval: Type.Optional(Type.Object({
      mode: StringEnum(ApprovalModeValues, {
        description: "Annotation: a person or tool sets bootc.dev/approve-revision=N on the " +
          "pool (kubectl bootc approve POOL) for each revision N. Webhook: the controller " +
          "POSTs to webhook; a 2xx approves, a 4xx refuses (its message is shown), anything " +
          "else is retried with back-off.",
      }),
      scope: Type.Optional(StringEnum(ApprovalScopeValues, {
        default: "Pool",
        description: "Pool: one approval per revision. Node: one per node and revision, " +
          "asked just before the node would take a reboot slot (Webhook only).",
      })),
      webhook: Type.Optional(Type.Object(
        { ...webhookEndpointFields },
        {
          description: "The endpoint asked (mode: Webhook).",
          ...validations(WEBHOOK_CREDENTIALS_NEED_TLS),
        },
      )),
    }, {
      description: "No node takes a reboot slot for a revision until it is approved (staging " +
        "goes on). Rollbacks of a failed image need no approval.",
      ...validations(
        {
          rule: "self.mode == 'Webhook' ? has(self.webhook) : !has(self.webhook)",
          message: "webhook is required with mode: Webhook and not allowed otherwise",
        },
        {
          rule: "!has(self.scope) || self.scope == 'Pool' || self.mode == 'Webhook'",
          message: "scope: Node needs mode: Webhook (an annotation approves a whole revision)",
        },
      ),
    })),
  }, { default: {} }),
  timeZone: Type.Optional(Type.String({
    ...TimeZone,
    description: "The IANA time zone of every schedule of this pool (maintenance windows, " +
      'scheduled budgets); default "UTC".',
  })),
  maintenance: Type.Optional(Type.Object({
    windows: Type.Optional(Type.Array(
      Type.Object({ schedule: CronSchedule, duration: Duration }, {
        description: "A window opening at each start of `schedule` for `duration`.",
      }),
      {
        maxItems: 16,
        description: "New reboots start only inside a window (a node whose reboot started " +
          "inside may finish). None: always.",
      },
    )),
    blackouts: Type.Optional(Type.Array(
      Type.Object({
        start: Instant("RFC 3339 start (inclusive), such as 2026-12-20T00:00:00+01:00."),
        end: Instant("RFC 3339 end (exclusive), after start."),
        reason: Type.Optional(Type.String({ maxLength: 256 })),
      }, {
        description: "No new reboot starts between start and end, whatever the windows say.",
        ...validations({
          // Only when both are instants: a bad one already has its own message.
          rule: `!${celIsInstant("self.start")} || !${celIsInstant("self.end")} || ` +
            "timestamp(self.end) > timestamp(self.start)",
          message: "end must be after start",
        }),
      }),
      { maxItems: 32 },
    )),
    stageOutsideWindows: Type.Optional(Type.Boolean({
      default: true,
      description: "Whether nodes download new images outside maintenance windows.",
    })),
  }, { description: "When new reboots may start." })),
  disruption: Type.Object({
    rebootPolicy: StringEnum(RebootPolicyValues, {
      default: "RebootOnly",
      description: "RebootOnly always reboots; AllowSoftReboot lets bootc do a userspace-only " +
        "soft reboot when the staged deployment supports it.",
    }),
  }, { default: {} }),
  pullSecretRef: Type.Optional(SecretReference),
  hooks: Type.Optional(Type.Array(HookSpec, {
    maxItems: MAX_HOOKS,
    description: "Endpoints notified of the rollout's phases (node pre-drain, pre-reboot, " +
      "post-verification; rollout started, completed, halted, rolled back). Notifications " +
      "only: a failing hook never blocks a rollout.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
  })),
  deletionPolicy: Type.Optional(Type.Object({
    mode: StringEnum(DeletionModeValues, {
      default: "Release",
      description: "What deleting the pool does to a rollout under way. Release hands every " +
        "node back where it stands; RollForward finishes the rollout on the target first; " +
        "RollBack returns every node to the last image that rolled out before it; Threshold " +
        "rolls forward when at least `threshold` of the nodes run the target, else back. The " +
        "choice is made once, at deletion, and shown in status.deletion.",
    }),
    threshold: Type.Optional(Type.String({
      maxLength: 4,
      description: "For Threshold: the share of nodes on the target from which the pool rolls " +
        'forward (default "50%").',
      ...validations({
        rule: "self.matches('^(100|[1-9]?[0-9])%$')",
        message: 'must be a percentage from 0% to 100% (for example "50%")',
      }),
    })),
  }, {
    description: "How the pool finishes when it is deleted mid-rollout.",
    ...validations({
      rule: "!has(self.threshold) || self.mode == 'Threshold'",
      message: "threshold applies only to mode Threshold",
    }),
  })),
});

/** One platform entry of a multi-architecture image index. */
export const PlatformDigest = Type.Object({
  architecture: Type.String(),
  os: Type.String(),
  variant: Type.Optional(Type.String()),
  digest: Type.String({ pattern: DIGEST_PATTERN }),
});

/** One entry of `status.history`. */
export const Revision = Type.Object({
  revision: Type.Integer({ minimum: 1 }),
  image: Type.String({ description: "The digest-pinned image." }),
  digest: Type.String(),
  startedAt: Type.String({ format: "date-time" }),
  endedAt: Type.Optional(Type.String({ format: "date-time" })),
  outcome: StringEnum(Object.values(RevisionOutcome) as [string, ...string[]]),
  message: Type.Optional(Type.String({ maxLength: 1024 })),
  signature: Type.Optional(Type.String({
    maxLength: 1024,
    description: "The signature verdict when the revision started (spec.image.verification): " +
      "verified by keys[N], or not verified and why (Audit).",
  })),
});

/** How many entries `status.queue` holds at most (the first of the queue; `slots.waiting` counts all). */
export const SLOT_QUEUE_LIMIT = 32;

/** `status.slots`: the pool's reboot slots now, and which budget sets their number. */
export const SlotsStatus = Type.Object({
  limit: Type.Integer({
    minimum: 0,
    description: "Nodes of the pool that may be disrupted at once now: the most restrictive " +
      "of maxUnavailable, the active rollout.budgets and the BootcDisruptionBudgets that " +
      "select every node of the pool.",
  }),
  inUse: Type.Integer({
    minimum: 0,
    description: "Nodes of the pool disrupted now (in a reboot slot, or being handed back).",
  }),
  waiting: Type.Integer({
    minimum: 0,
    description: "Nodes staged and Ready that wait for a slot (status.queue lists the first).",
  }),
  source: StringEnum(
    [
      SlotLimitSource.MaxUnavailable,
      SlotLimitSource.Budget,
      SlotLimitSource.ClusterBudget,
      SlotLimitSource.InvalidSpec,
    ] as const,
    {
      description: "What sets the limit: spec.rollout.maxUnavailable, a spec.rollout.budgets " +
        "entry, a BootcDisruptionBudget, or an invalid spec (no new slot).",
    },
  ),
  name: Type.String({
    maxLength: 253,
    description: 'Which one: "maxUnavailable", "rollout.budgets[1]", the ' +
      'BootcDisruptionBudget\'s name, or "spec" (invalid).',
  }),
  until: Type.Optional(Type.String({
    format: "date-time",
    description: "When a scheduled budget sets the limit: when its active period ends.",
  })),
  message: Type.String({ maxLength: 1024, description: "For people: what sets the limit." }),
  maxUnhealthy: Type.Optional(Type.Integer({
    minimum: 1,
    description: "spec.rollout.maxUnhealthy as resolved: unhealthy slot nodes that halt the " +
      "rollout.",
  })),
}, { description: "The pool's reboot slots, as the controller applies them." });

/** One entry of `status.queue`. */
export const QueueEntry = Type.Object({
  node: Type.String({ maxLength: 253 }),
  position: Type.Integer({ minimum: 1, description: "1: the next to get a reboot slot." }),
  waitingFor: Type.String({
    maxLength: 64,
    description: "What holds it back: a gate's reason (BudgetExhausted, Paused, " +
      "OutsideMaintenanceWindow, Blackout, WaitingForPool, ClusterBudgetExhausted, a canary " +
      "reason), RolloutHalted, PodDisruptionBudget (its drain would wait on one a drain in " +
      "flight needs), DrainPolicy (the drain policy refuses a pod on it: emptyDir data), " +
      "BlockingPod (a pod spec.rollout.blockingPodSelector selects runs on it), Skipped (its " +
      "Node's bootc.dev/update-priority is 0), or PodList " +
      "(the controller is reading its pods).",
  }),
  blockedBy: Type.Optional(Type.String({
    maxLength: 512,
    description: "With BlockingPod: the pods that hold it (namespace/name).",
  })),
  orderedBy: Type.Optional(Type.String({
    maxLength: 128,
    description: "What sets its place besides the name (spec.rollout.order, its " +
      "bootc.dev/update-priority, or running the controller: last).",
  })),
});

/** One of `status.hooks`: a hook's last finished delivery. */
export const HookDeliveryStatus = Type.Object({
  name: Type.String({ description: "The hook (spec.hooks[].name)." }),
  phase: StringEnum(HookPhaseValues),
  node: Type.Optional(Type.String({ description: "The node, for a node phase." })),
  revision: Type.Integer({ minimum: 0, description: "The revision (status.history)." }),
  result: StringEnum(HookResultValues),
  attempts: Type.Integer({ minimum: 0, description: "Attempts made (0: never sent)." }),
  time: Type.String({ format: "date-time", description: "When the delivery finished." }),
  message: Type.Optional(Type.String({
    maxLength: 1024,
    description: "The last attempt's answer or error.",
  })),
});

/** BootcNodePool status. */
export const BootcNodePoolStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  targetDigest: Type.Optional(Type.String({
    description: "The digest being rolled out (for a multi-arch image, the index digest).",
  })),
  targetImage: Type.Optional(Type.String({
    description: "The digest-pinned pullspec written to every BootcNode.",
  })),
  targetPlatforms: Type.Optional(Type.Array(PlatformDigest, {
    description: "Per-platform manifest digests when the target is an image index; bootc reports " +
      "these per-architecture digests as imageDigest.",
  })),
  targetShort: Type.Optional(Type.String({
    maxLength: 256,
    description: "The target for people: tag (or channel version), the image's version when " +
      'known, and 12 hex digits of its digest, e.g. "v2 (2.0) 3f2a9c1d4e5b".',
  })),
  targetVersion: Type.Optional(Type.String({
    maxLength: 256,
    description: "The target's version as bootc reports it (the image's version label), once " +
      "a node has staged or booted it.",
  })),
  state: Type.Optional(Type.String({
    maxLength: 64,
    description: "One headline, the most important first: a problem (InvalidSpec, " +
      "PullSecretInvalid, ImageResolutionFailed, SignatureInvalid, Halted, RolledBack, CircuitOpen, " +
      "ImageFailedBefore, HealthCheckFailed, NodeConflict, NodeStalled, NodeDegraded, " +
      "ApprovalWebhookFailing, PreconditionFailing; WritesFailing while the controller's writes for the pool " +
      "have failed for progressTimeoutSeconds), else the " +
      "gate that holds reboots back (Paused, Blackout, OutsideMaintenanceWindow, " +
      "BudgetExhausted, WaitingForPool, AwaitingApproval, ApprovalRefused, " +
      "ClusterBudgetExhausted, a canary reason, StagingLimit), " +
      "else the progress (Resolving, Staging, RollingOut, AllUpdated).",
  })),
  deployedDigest: Type.Optional(Type.String({ description: "The last digest fully rolled out." })),
  updateAvailable: Type.Optional(Type.Boolean()),
  verification: Type.Optional(Type.Object({
    image: Type.String({ description: "The digest-pinned image the verdict is about." }),
    verified: Type.Boolean(),
    by: Type.Optional(Type.String({
      maxLength: 64,
      description: "The key that verified it (keys[N]).",
    })),
    message: Type.Optional(Type.String({
      maxLength: 1024,
      description: "Why it did not verify.",
    })),
    checkedTime: Type.String({ format: "date-time" }),
  }, {
    description: "The signature verdict of the pool's latest candidate image " +
      "(spec.image.verification).",
  })),
  lastResolvedTime: Type.Optional(Type.String({ format: "date-time" })),
  nextTagResolutionTime: Type.Optional(Type.String({
    format: "date-time",
    description: "When the controller next resolves the tag to a digest (tag references only).",
  })),
  nodeCount: Type.Optional(Type.Integer()),
  updatedCount: Type.Optional(Type.Integer()),
  updatingCount: Type.Optional(Type.Integer()),
  degradedCount: Type.Optional(Type.Integer()),
  slotsInUse: Type.Optional(Type.Integer()),
  slots: Type.Optional(SlotsStatus),
  queue: Type.Optional(Type.Array(QueueEntry, {
    maxItems: SLOT_QUEUE_LIMIT,
    description: "The first nodes waiting for a reboot slot, in the order slots are handed " +
      "out, each with what holds it back.",
  })),
  notes: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), {
    maxItems: 8,
    description: "While the pool is not up to date: what its UpToDate message says after the " +
      "node counts, one entry a part (what keeps the spec from being realised; the gates' " +
      "waits and the rollout's notes), for views that must not take the message apart.",
  })),
  writesFailingSince: Type.Optional(Type.String({
    format: "date-time",
    description: "While the controller's writes for the pool have failed for " +
      "progressTimeoutSeconds in a row: since when (the Degraded condition says so).",
  })),
  staging: Type.Optional(Type.Object({
    limit: Type.Integer({ minimum: 0, description: "spec.rollout.maxStaging as resolved." }),
    downloading: Type.Integer({ minimum: 0, description: "Nodes downloading the target now." }),
    queued: Type.Integer({ minimum: 0, description: "Nodes waiting for a staging place." }),
  }, { description: "The staging limit, while it holds nodes back." })),
  conditions: Type.Optional(Conditions),
  deletion: Type.Optional(Type.Object({
    direction: StringEnum(DeletionDirectionValues, {
      description: "Forward: the pool finishes on its target; Back: on the image before it.",
    }),
    image: Type.String({ maxLength: 1024, description: "The digest-pinned image it finishes on." }),
    digest: Type.String({ maxLength: 128 }),
    decidedAt: Type.String({ format: "date-time" }),
  }, {
    description: "Set once the pool is deleted under a deletionPolicy that finishes first: the " +
      "image every node runs before the nodes are handed back and the pool goes.",
  })),
  history: Type.Optional(Type.Array(Revision, {
    maxItems: 10,
    description: "The last revisions rolled out, oldest first.",
  })),
  failedDigests: Type.Optional(Type.Array(Type.String(), {
    maxItems: 32,
    description: "Digests that failed their health checks: never chosen again automatically.",
  })),
  consecutiveFailures: Type.Optional(Type.Integer({
    minimum: 0,
    description: "Failed rollouts since the last success; maxRollbacks of them open the circuit.",
  })),
  circuitReset: Type.Optional(Type.String({
    description: "The last bootc.dev/reset-circuit-breaker value the controller acted on.",
  })),
  rollbackHold: Type.Optional(Type.Object({
    ref: Type.String({ description: "spec.image.ref when the pool rolled back." }),
    failedImage: Type.String({ description: "The image that failed." }),
    image: Type.String({ description: "The image the pool went back to." }),
    at: Type.String({ format: "date-time" }),
  }, {
    description: "An automatic pool rollback: while spec.image.ref is unchanged (and still " +
      "means failedImage) the pool stays on image. The user's spec is never rewritten.",
  })),
  channel: Type.Optional(Type.Object({
    repository: Type.String(),
    constraint: Type.Optional(Type.String()),
    currentVersion: Type.Optional(Type.String({ description: "The version rolled out." })),
    currentTag: Type.Optional(Type.String()),
    newestVersion: Type.Optional(Type.String({
      description: "The newest version in the repository inside the constraint.",
    })),
    newestTag: Type.Optional(Type.String()),
    lastCheckTime: Type.Optional(Type.String({ format: "date-time" })),
    nextCheckTime: Type.Optional(Type.String({ format: "date-time" })),
    failedVersions: Type.Optional(Type.Array(Type.String(), {
      maxItems: 64,
      description: "Versions that failed their health checks: never chosen again.",
    })),
    unverifiedVersions: Type.Optional(Type.Array(
      Type.Object({
        version: Type.String(),
        time: Type.String({ format: "date-time", description: "When it did not verify." }),
      }),
      {
        maxItems: 16,
        description: "Versions whose image did not verify (spec.image.verification, Enforce): " +
          "passed over until the channel's next check after time, then tried again.",
      },
    )),
    message: Type.Optional(Type.String({
      maxLength: 1024,
      description: "Why a newer version is not taken (outside the constraint, failed before, " +
        "circuit open, paused), or what the last check found.",
    })),
  }, { description: "The channel the pool follows (spec.image.channel)." })),
  hooks: Type.Optional(Type.Array(HookDeliveryStatus, {
    maxItems: MAX_HOOKS,
    description: "Per hook, its last finished delivery.",
  })),
  canary: Type.Optional(Type.Object({
    image: Type.String({ description: "The target the canary is for." }),
    phase: StringEnum(["Updating", "Soaking", "Passed", "Failed"] as const),
    nodes: Type.Integer({ minimum: 1, description: "Canary batch size." }),
    soakUntil: Type.Optional(Type.String({ format: "date-time" })),
  })),
  approval: Type.Optional(Type.Object({
    revision: Type.Integer({ minimum: 1, description: "The revision the verdicts are for." }),
    image: Type.String({ description: "That revision's image." }),
    verdict: Type.Optional(StringEnum(ApprovalVerdictValues, {
      description: "The revision's verdict (scope Pool; NotRequired: an automatic rollback).",
    })),
    message: Type.Optional(Type.String({
      maxLength: 1024,
      description: "What the approval waits for, or the refuser's message.",
    })),
    annotation: Type.Optional(Type.String({
      maxLength: 256,
      description: "The bootc.dev/approve-revision value last read (mode: Annotation).",
    })),
    webhookFailingSince: Type.Optional(Type.String({
      format: "date-time",
      description: "Since when every attempt to ask the webhook about this revision has " +
        "failed (kept across controller restarts; cleared by a verdict). Past the pool's " +
        "progressTimeoutSeconds the pool is Degraded (ApprovalWebhookFailing).",
    })),
    webhookError: Type.Optional(Type.String({
      maxLength: 256,
      description: "What the webhook's last failed attempt said.",
    })),
    nodes: Type.Optional(Type.Array(
      Type.Object({
        node: Type.String({ maxLength: 253 }),
        verdict: StringEnum(ApprovalVerdictValues),
        message: Type.Optional(Type.String({ maxLength: 256 })),
      }),
      {
        maxItems: MAX_APPROVAL_NODES,
        description: "Per-node verdicts for the revision (scope Node), members only.",
      },
    )),
  }, {
    description: "The approval gate's record for the current revision (spec.rollout.approval): " +
      "decided verdicts are never asked again, also after a controller restart.",
  })),
});

const POOL_NAME_WHY = `the pool name is the value of the ${LABEL_POOL} label on its BootcNodes`;

/**
 * The BootcNodePool resource. The API server already requires its name to be a DNS
 * subdomain (up to 253 characters); it must also be a label value, the
 * {@linkcode LABEL_POOL} label on the pool's BootcNodes, so at most 63.
 */
export const BootcNodePool = Type.Object({
  apiVersion: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Unsafe<ObjectMeta>({ type: "object" })),
  spec: BootcNodePoolSpec,
  status: Type.Optional(BootcNodePoolStatus),
}, {
  ...validations({
    // The API server already requires a DNS subdomain, which within 63 characters is a
    // valid label value; only the length needs checking (and size() is cheap on a name
    // of unbounded length, where matches() would blow the CEL cost budget). No
    // messageExpression: the API server estimates string(int) as unbounded too.
    rule: `size(self.metadata.name) <= ${MAX_LABEL_VALUE_LENGTH}`,
    fieldPath: ".metadata.name",
    message: `metadata.name must be at most ${MAX_LABEL_VALUE_LENGTH} characters: ${POOL_NAME_WHY}`,
  }),
});

/** BootcNode spec, written by the controller. */
export const BootcNodeSpec = Type.Object({
  desiredImage: Type.String({
    minLength: 1,
    maxLength: 512,
    description: "The digest-pinned image this node should run.",
    ...validations({
      rule: `self.matches(r'${DIGEST_PINNED_PATTERN}')`,
      message:
        "must be pinned by digest (<repository>@sha256:<64 hex digits>); tags are resolved " +
        "by the BootcNodePool, not here",
    }, {
      rule: `self.matches(r'${IMAGE_REFERENCE_PATTERN}')`,
      message:
        "must be a container image reference such as quay.io/example/os@sha256:<64 hex digits>",
    }),
  }),
  desiredImageState: StringEnum(DesiredImageStateValues, {
    default: "Staged",
    description: "Staged: stage the image only. Booted: apply the staged image and reboot.",
  }),
  rebootPolicy: StringEnum(RebootPolicyValues, {
    default: "RebootOnly",
    description: "Copied from the pool: whether a soft reboot may be used.",
  }),
  pullSecretRef: Type.Optional(SecretReference),
  pullSecretHash: Type.Optional(Type.String({
    description: "Hash of the pull Secret's content; a change makes the daemon re-fetch it.",
  })),
  healthUnits: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
    maxItems: MAX_HEALTH_UNITS,
    description: "Copied from the pool: systemd units that must be active for the host to " +
      "count as healthy. Unset: systemctl is-system-running must say running.",
  })),
  bootAssessment: Type.Optional(StringEnum(BootAssessmentValues, {
    description: "Copied from the pool: Require makes systemd's boot assessment " +
      "(boot-complete.target, systemd-bless-boot status) part of the host's health.",
  })),
  signatureKeys: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 16384 }), {
    maxItems: 16,
    description: "Copied from the pool when it enforces signatures (spec.image.verification, " +
      "Enforce): the public keys (PEM) the host's containers policy requires for " +
      "desiredImage's repository, so the host refuses an image none of them signed.",
  })),
});

/** One deployment as reported by bootc (booted, staged or rollback). */
export const BootEntryStatus = Type.Object({
  image: Type.Optional(Type.String({ description: "The pullspec bootc was given." })),
  imageDigest: Type.Optional(Type.String({ description: "The per-architecture manifest digest." })),
  version: Type.Optional(Type.String()),
  timestamp: Type.Optional(Type.String()),
  architecture: Type.Optional(Type.String()),
  softRebootCapable: Type.Optional(Type.Boolean()),
  incompatible: Type.Optional(Type.Boolean({
    description: "True if the deployment has local mutations bootc cannot manage.",
  })),
  downloadOnly: Type.Optional(Type.Boolean({
    description: "True when a staged deployment is locked (not applied on an unexpected reboot).",
  })),
});

/** BootcNode status, written by the daemon. */
export const BootcNodeStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  booted: Type.Optional(BootEntryStatus),
  staged: Type.Optional(BootEntryStatus),
  rollback: Type.Optional(BootEntryStatus),
  bootcVersion: Type.Optional(Type.String()),
  autoUpdatesDisabled: Type.Optional(Type.Boolean({
    description: "True when the daemon masked bootc-fetch-apply-updates.timer, which would " +
      "otherwise apply updates and reboot without a drain.",
  })),
  hostHealth: Type.Optional(Type.Object({
    bootedDigest: Type.Optional(Type.String({
      description: "booted.imageDigest when the check ran: the check is about that boot.",
    })),
    checkedAt: Type.String({ format: "date-time" }),
    state: StringEnum(["Healthy", "Starting", "Unhealthy", "Unknown"] as const),
    failedUnits: Type.Optional(Type.Array(Type.String(), { maxItems: 64 })),
    message: Type.Optional(Type.String({ maxLength: 4096 })),
  }, { description: "The daemon's last host health check (see the HostHealthy condition)." })),
  phaseImage: Type.Optional(Type.String({
    description: "The desiredImage the daemon's phase conditions (Idle, ImageStaged, " +
      "Cordoned, Drained, Rebooted) are about.",
  })),
  verification: Type.Optional(Type.Object({
    image: Type.String({ description: "The image the Verified condition is about." }),
    failedChecks: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), {
      maxItems: 16,
      description: "While Verified is False: the checks that failed (NodeReady, " +
        "HostHealthy, BootAssessment, Pods, Prometheus, FellBack).",
    })),
  }, { description: "What the controller's Verified condition is about." })),
  conditions: Type.Optional(Conditions),
});

/** The BootcNode resource. */
export const BootcNode = Type.Object({
  apiVersion: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Unsafe<ObjectMeta>({ type: "object" })),
  spec: BootcNodeSpec,
  status: Type.Optional(BootcNodeStatus),
});

/** BootcDisruptionBudget spec: a cap on disrupted nodes across pools. */
export const BootcDisruptionBudgetSpec = Type.Object({
  nodeSelector: Type.Optional(LabelSelector),
  maxUnavailable: intOrPercent(
    1,
    "How many of the selected nodes may be disrupted (cordoned for an update or rebooting) " +
      "at once, whatever pool they belong to: an integer >= 1 or a percentage of the " +
      "selected nodes, rounded up.",
  ),
  topologyKey: Type.Optional(Type.String({
    minLength: 1,
    maxLength: MAX_LABEL_KEY_LENGTH,
    description: "A node label whose values are topology domains (for example " +
      "topology.kubernetes.io/zone); nodes without it form a domain of their own.",
    ...validations({
      rule: celIsLabelKey("self"),
      message: `must be a valid label key: ${LABEL_KEY_RULE}`,
    }),
  })),
  maxUnavailablePerDomain: Type.Optional(Type.Integer({
    minimum: 1,
    description: "With topologyKey: at most this many disrupted nodes per domain.",
  })),
  maxDomainsUnavailable: Type.Optional(Type.Integer({
    minimum: 1,
    description: "With topologyKey: at most this many domains with any disrupted node.",
  })),
}, {
  ...validations({
    rule: "has(self.topologyKey) || (!has(self.maxUnavailablePerDomain) && " +
      "!has(self.maxDomainsUnavailable))",
    message: "maxUnavailablePerDomain and maxDomainsUnavailable need a topologyKey",
  }),
});

/** BootcDisruptionBudget status, written by the controller. */
export const BootcDisruptionBudgetStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({
    minimum: 0,
    description: "The spec generation this status was computed from.",
  })),
  selectedNodes: Type.Optional(Type.Integer({ description: "Nodes the budget selects." })),
  disruptedNodes: Type.Optional(Type.Integer({
    description: "Of those, disrupted now (carrying the operator's disruption record: in a " +
      "reboot slot, draining, rebooting, or being handed back), whatever their pool.",
  })),
  allowed: Type.Optional(Type.Integer({
    description: "maxUnavailable resolved against the selected nodes: how many may be " +
      "disrupted at once (0 while the budget is invalid: its nodes get no slot).",
  })),
  disrupted: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), {
    maxItems: 20,
    description: "The disrupted nodes, by name (the first 20).",
  })),
  conditions: Type.Optional(Type.Array(Condition, {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    description: "Degraded: True (InvalidSpec) when the spec cannot be read; the message " +
      "names the field.",
  })),
});

/** The BootcDisruptionBudget resource (cluster scoped). */
export const BootcDisruptionBudget = Type.Object({
  apiVersion: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Unsafe<ObjectMeta>({ type: "object" })),
  spec: BootcDisruptionBudgetSpec,
  status: Type.Optional(BootcDisruptionBudgetStatus),
});

/** The subset of metav1.ObjectMeta the operator uses. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

/** metav1.OwnerReference. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A condition in the shape of metav1.Condition. */
export type Condition = Static<typeof Condition>;
/** BootcNodePool spec. */
export type BootcNodePoolSpec = Static<typeof BootcNodePoolSpec>;
/** BootcNodePool status. */
export type BootcNodePoolStatus = Static<typeof BootcNodePoolStatus>;
/** `status.slots` of a pool. */
export type SlotsStatus = Static<typeof SlotsStatus>;
/** One entry of a pool's `status.queue`. */
export type QueueEntry = Static<typeof QueueEntry>;
/** A BootcNodePool. `metadata` is always present on objects read from the API. */
export type BootcNodePool = Static<typeof BootcNodePool> & { metadata: ObjectMeta };
/** BootcNode spec. */
export type BootcNodeSpec = Static<typeof BootcNodeSpec>;
/** BootcNode status. */
export type BootcNodeStatus = Static<typeof BootcNodeStatus>;
/** One deployment as reported by bootc. */
export type BootEntryStatus = Static<typeof BootEntryStatus>;
/** A BootcNode. `metadata` is always present on objects read from the API. */
export type BootcNode = Static<typeof BootcNode> & { metadata: ObjectMeta };
/** A BootcDisruptionBudget. */
export type BootcDisruptionBudget = Static<typeof BootcDisruptionBudget> & { metadata: ObjectMeta };
/** BootcDisruptionBudget spec. */
export type BootcDisruptionBudgetSpec = Static<typeof BootcDisruptionBudgetSpec>;
/** BootcDisruptionBudget status. */
export type BootcDisruptionBudgetStatus = Static<typeof BootcDisruptionBudgetStatus>;
/** One entry of a pool's `status.history`. */
export type Revision = Static<typeof Revision>;
/** An endpoint the controller calls, as the spec gives it. */
export type WebhookEndpointSpec = Static<typeof WebhookEndpointSpec>;
/** One of `spec.hooks`. */
export type HookSpec = Static<typeof HookSpec>;
/** One of `status.hooks`. */
export type HookDeliveryStatus = Static<typeof HookDeliveryStatus>;
/** A pool's health-check settings (`spec.rollout.health`). */
export type HealthSpec = Static<typeof HealthSpec>;
/** `spec.rollout.approval`. */
export type ApprovalSpec = NonNullable<BootcNodePoolSpec["rollout"]["approval"]>;
/** `status.approval`. */
export type ApprovalStatus = NonNullable<BootcNodePoolStatus["approval"]>;
/** `spec.rollout.drain`. */
export type DrainPolicySpec = Static<typeof DrainPolicySpec>;
/** One of `spec.rollout.preconditions.objects`. */
export type ObjectPrecondition = Static<typeof ObjectPrecondition>;
/** `spec.rollout.preconditions.alerts`. */
export type PrometheusAlertsPrecondition = Static<typeof PrometheusAlertsPrecondition>;
/** One platform entry of an image index. */
export type PlatformDigest = Static<typeof PlatformDigest>;

/** The schemas a CRD is generated from, keyed by kind. */
export const SCHEMAS: Record<"BootcNodePool" | "BootcNode" | "BootcDisruptionBudget", TSchema> = {
  BootcNodePool,
  BootcNode,
  BootcDisruptionBudget,
};
