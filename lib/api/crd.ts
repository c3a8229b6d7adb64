/**
 * Builds the CustomResourceDefinitions from the schemas in `schema.ts`.
 *
 * @module
 */
import type { TSchema } from "@sinclair/typebox";
import {
  ANNOTATION_NODE_STATE,
  ANNOTATION_STATE_DETAIL,
  ANNOTATION_STATE_SINCE,
  ANNOTATION_TARGET_SHORT,
  BUDGET,
  GROUP,
  NODE,
  POOL,
  VERSION,
} from "./constants.ts";
import { BootcDisruptionBudget, BootcNode, BootcNodePool } from "./schema.ts";

/** An additionalPrinterColumns entry. */
export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

/**
 * Converts a TypeBox schema to a structural OpenAPI v3 schema: symbols and
 * TypeBox-only keys dropped, and a property that has a default is not listed as
 * required (the API server fills it in before validating).
 */
export function toOpenApi(schema: TSchema): Record<string, unknown> {
  const plain = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  return clean(plain);
}

function clean(node: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$id" || key === "$schema") continue;
    if (key === "properties" && value && typeof value === "object") {
      const props: Record<string, unknown> = {};
      for (const [name, prop] of Object.entries(value as Record<string, unknown>)) {
        props[name] = clean(prop as Record<string, unknown>);
      }
      out.properties = props;
    } else if ((key === "items" || key === "additionalProperties") && isObject(value)) {
      out[key] = clean(value);
    } else {
      out[key] = value;
    }
  }
  if (Array.isArray(out.required) && isObject(out.properties)) {
    const props = out.properties;
    const required = (out.required as string[]).filter((name) =>
      !(isObject(props[name]) && "default" in (props[name] as Record<string, unknown>))
    );
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  // A record (`patternProperties`) renders as additionalProperties in Kubernetes.
  if (isObject(out.patternProperties)) {
    const [only] = Object.values(out.patternProperties);
    delete out.patternProperties;
    if (isObject(only)) out.additionalProperties = clean(only);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function crd(options: {
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  schema: TSchema;
  columns: PrinterColumn[];
}): Record<string, unknown> {
  const openAPIV3Schema = toOpenApi(options.schema);
  // metadata is validated by the API server itself. Declaring `name` (the only field
  // besides generateName a CRD may say anything about) lets a root rule on the name
  // report its error at metadata.name (`fieldPath`).
  const props = openAPIV3Schema.properties as Record<string, unknown>;
  props.metadata = { type: "object", properties: { name: { type: "string" } } };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${options.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: "Cluster",
      names: {
        kind: options.kind,
        listKind: `${options.kind}List`,
        plural: options.plural,
        singular: options.singular,
        shortNames: [...options.shortNames],
        categories: ["bootc"],
      },
      versions: [{
        name: VERSION,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: options.columns,
        schema: { openAPIV3Schema },
      }],
    },
  };
}

const condition = (type: string, field: "status" | "reason" | "message" | "lastTransitionTime") =>
  `.status.conditions[?(@.type=="${type}")].${field}`;

/**
 * The BootcNodePool CRD. The default columns fit a row in 120 columns (short
 * target, node counts, the UpToDate and Degraded conditions, one headline
 * STATE); full digests, the other counts and the rest are in `-o wide`.
 */
export function bootcNodePoolCrd(): Record<string, unknown> {
  return crd({
    ...POOL,
    schema: BootcNodePool,
    columns: [
      { name: "Target", type: "string", jsonPath: ".status.targetShort" },
      // Node counts, then the pool's health: its UpToDate and Degraded conditions.
      { name: "Nodes", type: "integer", jsonPath: ".status.nodeCount" },
      { name: "Updated", type: "integer", jsonPath: ".status.updatedCount" },
      { name: "UpToDate", type: "string", jsonPath: condition("UpToDate", "status") },
      { name: "Degraded", type: "string", jsonPath: condition("Degraded", "status") },
      { name: "State", type: "string", jsonPath: ".status.state" },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
      { name: "Updating", type: "integer", jsonPath: ".status.updatingCount", priority: 1 },
      {
        name: "DegradedNodes",
        type: "integer",
        jsonPath: ".status.degradedCount",
        priority: 1,
      },
      { name: "Image", type: "string", jsonPath: ".spec.image.ref", priority: 1 },
      { name: "TargetDigest", type: "string", jsonPath: ".status.targetDigest", priority: 1 },
      {
        name: "MaxUnavailable",
        type: "string",
        jsonPath: ".spec.rollout.maxUnavailable",
        priority: 1,
      },
      { name: "Paused", type: "boolean", jsonPath: ".spec.rollout.paused", priority: 1 },
      { name: "Slots", type: "integer", jsonPath: ".status.slotsInUse", priority: 1 },
      { name: "Deployed", type: "string", jsonPath: ".status.deployedDigest", priority: 1 },
      { name: "Reason", type: "string", jsonPath: condition("UpToDate", "reason"), priority: 1 },
      { name: "Health", type: "string", jsonPath: condition("Degraded", "reason"), priority: 1 },
      {
        name: "Revision",
        type: "integer",
        jsonPath: ".status.history[-1:].revision",
        priority: 1,
      },
      { name: "Canary", type: "string", jsonPath: ".status.canary.phase", priority: 1 },
      {
        name: "Circuit",
        type: "string",
        jsonPath: condition("CircuitOpen", "status"),
        priority: 1,
      },
      {
        name: "NextResolution",
        type: "date",
        jsonPath: ".status.nextTagResolutionTime",
        priority: 1,
      },
      { name: "Message", type: "string", jsonPath: condition("UpToDate", "message"), priority: 1 },
    ],
  });
}

/** `.metadata.annotations.<key>` with the key's dots escaped, as printer columns read it. */
const annotation = (key: string) => `.metadata.annotations.${key.replaceAll(".", "\\.")}`;

/**
 * The BootcNode CRD. The default columns (the node's state from the one
 * classification and what it is about, the daemon's phase, its version, its desired image in short
 * form) fit a row in 120 columns; the full references and the daemon's conditions are in `-o wide`.
 */
export function bootcNodeCrd(): Record<string, unknown> {
  return crd({
    ...NODE,
    schema: BootcNode,
    columns: [
      { name: "Pool", type: "string", jsonPath: ".metadata.ownerReferences[0].name" },
      { name: "State", type: "string", jsonPath: annotation(ANNOTATION_NODE_STATE) },
      // What the state is about where it does not say: the failed check, the stall.
      { name: "Detail", type: "string", jsonPath: annotation(ANNOTATION_STATE_DETAIL) },
      // The daemon's own phase: Staging and Staged show here at once (State says Pending).
      { name: "Phase", type: "string", jsonPath: condition("Idle", "reason") },
      { name: "Version", type: "string", jsonPath: ".status.booted.version" },
      { name: "Target", type: "string", jsonPath: annotation(ANNOTATION_TARGET_SHORT) },
      { name: "Since", type: "date", jsonPath: annotation(ANNOTATION_STATE_SINCE) },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
      { name: "DesiredState", type: "string", jsonPath: ".spec.desiredImageState", priority: 1 },
      { name: "Desired", type: "string", jsonPath: ".spec.desiredImage", priority: 1 },
      { name: "Booted", type: "string", jsonPath: ".status.booted.imageDigest", priority: 1 },
      { name: "Staged", type: "string", jsonPath: ".status.staged.imageDigest", priority: 1 },
      { name: "Verified", type: "string", jsonPath: condition("Verified", "status"), priority: 1 },
      { name: "Degraded", type: "string", jsonPath: condition("Degraded", "status"), priority: 1 },
      { name: "Health", type: "string", jsonPath: condition("HostHealthy", "reason"), priority: 1 },
      { name: "Stalled", type: "string", jsonPath: condition("Stalled", "reason"), priority: 1 },
      {
        name: "Reboot",
        type: "string",
        jsonPath: condition("RebootAllowed", "reason"),
        priority: 1,
      },
      { name: "Message", type: "string", jsonPath: condition("Degraded", "message"), priority: 1 },
    ],
  });
}

/** The BootcDisruptionBudget CRD (cluster-wide caps on disrupted nodes across pools). */
export function bootcDisruptionBudgetCrd(): Record<string, unknown> {
  return crd({
    ...BUDGET,
    schema: BootcDisruptionBudget,
    columns: [
      { name: "MaxUnavailable", type: "string", jsonPath: ".spec.maxUnavailable" },
      { name: "Allowed", type: "integer", jsonPath: ".status.allowed" },
      { name: "Disrupted", type: "integer", jsonPath: ".status.disruptedNodes" },
      { name: "Selected", type: "integer", jsonPath: ".status.selectedNodes" },
      { name: "Topology", type: "string", jsonPath: ".spec.topologyKey", priority: 1 },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ],
  });
}
