/**
 * A validating parser for `bootc status --format=json --format-version=1` and
 * for what older hosts print for `bootc status --json`.
 *
 * It checks the shape of every field the operator relies on and names the
 * offending path when something is wrong (`bootc status:
 * status.booted.image.imageDigest: expected a string, got number`), but it
 * tolerates what older hosts leave out (`architecture`, `downloadOnly`,
 * `softRebootCapable`, `store`, `otherDeployments`, `cachedUpdate`, `type`, …)
 * and ignores fields it does not know (`isContainer`, `configmaps`, …). Both
 * `org.containers.bootc/v1` and the `v1alpha1` of bootc before 1.1 are read:
 * the fields the operator uses have the same names and meaning in both.
 *
 * @module
 */
import {
  BOOTC_HOST_API_VERSION,
  BOOTC_HOST_API_VERSIONS,
  BOOTC_HOST_KIND,
  type BootEntry,
  type BootEntryOstree,
  type Host,
  type HostStatus,
  type ImageReference,
  type ImageStatus,
} from "./types.ts";

/** The status document could not be parsed or has an unexpected shape. */
export class BootcParseError extends Error {
  /** Creates the error; `path` names the offending field. */
  constructor(message: string, readonly path = "") {
    super(path ? `bootc status: ${path}: ${message}` : `bootc status: ${message}`);
    this.name = "BootcParseError";
  }
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function object(v: unknown, path: string): Json {
  if (!isObject(v)) throw new BootcParseError(`expected an object, got ${describe(v)}`, path);
  return v;
}

function describe(v: unknown): string {
  if (v === undefined) return "nothing (the field is missing)";
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v;
}

function requiredString(o: Json, key: string, path: string): string {
  const v = o[key];
  if (typeof v !== "string") {
    throw new BootcParseError(`expected a string, got ${describe(v)}`, `${path}.${key}`);
  }
  return v;
}

function optionalString(o: Json, key: string, path: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") {
    throw new BootcParseError(`expected a string, got ${describe(v)}`, `${path}.${key}`);
  }
  return v;
}

function optionalBoolean(o: Json, key: string, path: string): boolean | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") {
    throw new BootcParseError(`expected a boolean, got ${describe(v)}`, `${path}.${key}`);
  }
  return v;
}

function parseImageReference(v: unknown, path: string): ImageReference {
  const o = object(v, path);
  const ref: ImageReference = {
    image: requiredString(o, "image", path),
    // Very old hosts may omit the transport; bootc's default is the registry.
    transport: optionalString(o, "transport", path) ?? "registry",
  };
  if (o.signature !== undefined && o.signature !== null) ref.signature = o.signature;
  return ref;
}

function parseImageStatus(v: unknown, path: string): ImageStatus | null {
  if (v === null || v === undefined) return null;
  const o = object(v, path);
  const status: ImageStatus = {
    image: parseImageReference(o.image, `${path}.image`),
    imageDigest: requiredString(o, "imageDigest", path),
  };
  const version = optionalString(o, "version", path);
  if (version !== undefined) status.version = version;
  const timestamp = optionalString(o, "timestamp", path);
  if (timestamp !== undefined) status.timestamp = timestamp;
  const architecture = optionalString(o, "architecture", path);
  if (architecture !== undefined) status.architecture = architecture;
  return status;
}

function parseOstree(v: unknown, path: string): BootEntryOstree | null {
  if (v === null || v === undefined) return null;
  const o = object(v, path);
  const serial = o.deploySerial ?? 0;
  if (typeof serial !== "number" || !Number.isInteger(serial)) {
    throw new BootcParseError(
      `expected an integer, got ${describe(serial)}`,
      `${path}.deploySerial`,
    );
  }
  const ostree: BootEntryOstree = {
    checksum: requiredString(o, "checksum", path),
    deploySerial: serial,
  };
  const stateroot = optionalString(o, "stateroot", path);
  if (stateroot !== undefined) ostree.stateroot = stateroot;
  return ostree;
}

/** Parses one boot entry; `path` is used in error messages. */
export function parseBootEntry(v: unknown, path = "entry"): BootEntry | null {
  if (v === null || v === undefined) return null;
  const o = object(v, path);
  const entry: BootEntry = {
    image: parseImageStatus(o.image, `${path}.image`),
    cachedUpdate: parseImageStatus(o.cachedUpdate, `${path}.cachedUpdate`),
    incompatible: optionalBoolean(o, "incompatible", path) ?? false,
    pinned: optionalBoolean(o, "pinned", path) ?? false,
    softRebootCapable: optionalBoolean(o, "softRebootCapable", path) ?? false,
    ostree: parseOstree(o.ostree, `${path}.ostree`),
    composefs: o.composefs ?? null,
  };
  const downloadOnly = optionalBoolean(o, "downloadOnly", path);
  if (downloadOnly !== undefined) entry.downloadOnly = downloadOnly;
  const store = optionalString(o, "store", path);
  if (store !== undefined) entry.store = store;
  return entry;
}

function parseHostStatus(v: unknown): HostStatus {
  // An empty host (not a bootc system) may come with an empty or missing status.
  const o = v === undefined || v === null ? {} : object(v, "status");
  const others = o.otherDeployments;
  if (others !== undefined && others !== null && !Array.isArray(others)) {
    throw new BootcParseError(
      `expected an array, got ${describe(others)}`,
      "status.otherDeployments",
    );
  }
  const status: HostStatus = {
    staged: parseBootEntry(o.staged, "status.staged"),
    booted: parseBootEntry(o.booted, "status.booted"),
    rollback: parseBootEntry(o.rollback, "status.rollback"),
    otherDeployments: (others ?? []).map((e, i) =>
      parseBootEntry(e, `status.otherDeployments[${i}]`)
    ).filter((e): e is BootEntry => e !== null),
    rollbackQueued: optionalBoolean(o, "rollbackQueued", "status") ?? false,
    type: optionalString(o, "type", "status") ?? null,
  };
  if (o.usrOverlay !== undefined) status.usrOverlay = o.usrOverlay;
  if (o.readOnly !== undefined) status.readOnly = o.readOnly;
  return status;
}

/** A top-level optional string (its path is the bare key). */
function topString(o: Json, key: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") {
    throw new BootcParseError(`expected a string, got ${describe(v)}`, key);
  }
  return v;
}

/**
 * Parses the output of `bootc status --format=json --format-version=1` (or the
 * older `--json`). Throws {@linkcode BootcParseError} on malformed JSON, a
 * foreign document, or a field of the wrong type.
 */
export function parseHost(text: string): Host {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    const first = text.trim().split("\n")[0]?.slice(0, 200) ?? "";
    throw new BootcParseError(
      `not JSON (${e instanceof Error ? e.message : String(e)}): ${JSON.stringify(first)}`,
    );
  }
  const o = object(doc, "");
  const apiVersion = topString(o, "apiVersion") ?? BOOTC_HOST_API_VERSION;
  if (!BOOTC_HOST_API_VERSIONS.includes(apiVersion)) {
    throw new BootcParseError(
      `unsupported ${JSON.stringify(apiVersion)} (this daemon reads ${
        BOOTC_HOST_API_VERSIONS.join(" and ")
      })`,
      "apiVersion",
    );
  }
  const kind = topString(o, "kind") ?? BOOTC_HOST_KIND;
  if (kind !== BOOTC_HOST_KIND) {
    throw new BootcParseError(
      `unexpected ${JSON.stringify(kind)} (want ${BOOTC_HOST_KIND})`,
      "kind",
    );
  }
  const metadata = o.metadata === undefined || o.metadata === null
    ? {}
    : object(o.metadata, "metadata");
  const specJson = o.spec === undefined || o.spec === null ? {} : object(o.spec, "spec");
  const specImage = specJson.image === undefined || specJson.image === null
    ? null
    : parseImageReference(specJson.image, "spec.image");
  const host: Host = {
    apiVersion,
    kind,
    metadata: typeof metadata.name === "string" ? { name: metadata.name } : {},
    spec: { image: specImage },
    status: parseHostStatus(o.status),
  };
  const bootOrder = optionalString(specJson, "bootOrder", "spec");
  if (bootOrder !== undefined) host.spec.bootOrder = bootOrder;
  return host;
}
