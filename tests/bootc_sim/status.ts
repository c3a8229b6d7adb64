/**
 * Renders the simulated state the way `bootc status` does: the `BootcHost` object (JSON in
 * canonical form, YAML) and the human-readable text.
 *
 * @module
 */

import {
  type Deployment,
  type HostState,
  type PulledImage,
  type SimSettings,
  specImage,
  versionAtLeast,
} from "./model.ts";

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Options for {@linkcode buildHost}. */
export interface BuildHostOptions {
  /** The deployments. */
  state: HostState;
  /** The machine settings (version, container, composefs). */
  settings: SimSettings;
  /** `--booted`: null the staged and rollback entries. */
  bootedOnly?: boolean;
}

function imageStatus(d: Deployment, img: PulledImage): Json {
  return {
    image: { image: d.pullspec, transport: d.transport },
    version: img.version,
    timestamp: img.timestamp,
    imageDigest: img.imageDigest,
    architecture: img.architecture,
  };
}

function bootEntry(d: Deployment, settings: SimSettings, staged: boolean): Json {
  const entry: { [key: string]: Json } = {
    image: d.incompatible || !d.image ? null : imageStatus(d, d.image),
    cachedUpdate: d.incompatible || !d.cachedUpdate ? null : imageStatus(d, d.cachedUpdate),
    incompatible: d.incompatible,
    pinned: d.pinned,
    softRebootCapable: d.softRebootCapable,
  };
  // The field arrived with `upgrade --download-only` (1.12); older bootc does not print it.
  if (versionAtLeast(settings.bootcVersion, "1.12.0")) {
    entry.downloadOnly = staged && d.downloadOnly;
  }
  if (settings.composefs) {
    entry.store = null;
    entry.ostree = null;
    entry.composefs = {
      verity: d.checksum + d.checksum,
      bootType: "bls",
      bootloader: "grub",
      bootDigest: d.checksum,
    };
  } else {
    entry.store = "ostreeContainer";
    entry.ostree = { checksum: d.checksum, deploySerial: d.deploySerial, stateroot: d.stateroot };
    entry.composefs = null;
  }
  return entry;
}

/** The empty host bootc prints when it is not on a booted bootc system (exit code 0). */
export function emptyHost(): { [key: string]: Json } {
  return {
    apiVersion: "org.containers.bootc/v1",
    kind: "BootcHost",
    metadata: { name: "host" },
    spec: { image: null, bootOrder: "default" },
    status: { staged: null, booted: null, rollback: null, rollbackQueued: false, type: null },
  };
}

/** Builds the `BootcHost` object bootc would print for this state. */
export function buildHost(opts: BuildHostOptions): { [key: string]: Json } {
  const { state, settings } = opts;
  if (settings.notBootc || settings.inContainer || !state.booted) return emptyHost();
  const staged = opts.bootedOnly ? null : state.staged;
  const rollback = opts.bootedOnly ? null : state.rollback;
  const spec = specImage(state);
  const status: { [key: string]: Json } = {
    staged: staged ? bootEntry(staged, settings, true) : null,
    booted: bootEntry(state.booted, settings, false),
    rollback: rollback ? bootEntry(rollback, settings, false) : null,
    rollbackQueued: state.rollbackQueued,
    type: state.booted.image && !state.booted.incompatible ? "bootcHost" : null,
  };
  if (!opts.bootedOnly && state.other.length > 0) {
    status.otherDeployments = state.other.map((d) => bootEntry(d, settings, false));
  }
  if (state.usrOverlay) {
    status.usrOverlay = { accessMode: state.usrOverlay, persistence: "transient" };
  }
  return {
    apiVersion: "org.containers.bootc/v1",
    kind: "BootcHost",
    metadata: { name: "host" },
    spec: {
      image: spec,
      bootOrder: state.rollbackQueued ? "rollback" : "default",
    },
    status,
  };
}

/** Canonical JSON (keys sorted, no whitespace), as bootc's `to_canon_json_writer` writes it. */
export function canonicalJson(value: Json): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
}

function row(name: string, prefixLen: number, value: string): string {
  return `${" ".repeat(Math.max(0, prefixLen - [...name].length))}${name}: ${value}\n`;
}

/** Timestamps without fractional seconds, as bootc's human output shows them. */
function humanTimestamp(ts: string): string {
  return ts.replace(/\.\d+Z$/, "Z");
}

type Slot = "staged" | "booted" | "rollback" | "other";

function renderSlot(slot: Slot, entry: Json, host: { [key: string]: Json }, verbose: boolean) {
  const e = entry as { [key: string]: Json };
  const image = e.image as { [key: string]: Json } | null;
  const ostree = e.ostree as { [key: string]: Json } | null;
  let out = "";
  if (!image) {
    const prefix = {
      staged: "  Staged ostree",
      booted: "● Booted ostree",
      rollback: "  Rollback ostree",
      other: " Other ostree",
    }[slot];
    out += `${prefix}\n`;
    out += row("Commit", [...prefix].length, String(ostree?.checksum ?? ""));
    return out;
  }
  const ref = image.image as { [key: string]: string };
  const imageref = ref.transport === "registry" ? ref.image : `${ref.transport}:${ref.image}`;
  const prefix = {
    staged: "  Staged image",
    booted: "● Booted image",
    rollback: "  Rollback image",
    other: "   Other image",
  }[slot];
  const n = [...prefix].length;
  out += `${prefix}: ${imageref}\n`;
  out += row("Digest", n, `${image.imageDigest} (${image.architecture})`);
  const ts = typeof image.timestamp === "string" ? humanTimestamp(image.timestamp) : null;
  if (typeof image.version === "string") {
    out += row("Version", n, ts ? `${image.version} (${ts})` : image.version);
  } else if (ts) {
    out += row("Timestamp", n, ts);
  }
  if (e.pinned) out += row("Pinned", n, "yes");
  const cached = e.cachedUpdate as { [key: string]: Json } | null;
  if (cached && cached.imageDigest !== image.imageDigest) {
    if (typeof cached.version === "string") {
      const cts = typeof cached.timestamp === "string"
        ? ` (${humanTimestamp(cached.timestamp)})`
        : "";
      out += row("UpdateVersion", n, `${cached.version}${cts}`);
    } else {
      out += row("Update", n, "Available");
    }
    out += row("UpdateDigest", n, String(cached.imageDigest));
  }
  const status = host.status as { [key: string]: Json };
  const overlay = status.usrOverlay as { [key: string]: Json } | undefined;
  if (slot === "booted" && overlay) {
    out += row("/usr overlay", n, `${overlay.persistence}, ${overlay.accessMode}`);
  }
  if (verbose) {
    if (ostree) {
      out += row("StateRoot", n, String(ostree.stateroot));
      out += row("Deploy serial", n, String(ostree.deploySerial));
      out += row("Staged", n, slot === "staged" ? "yes" : "no");
      out += row("Commit", n, String(ostree.checksum));
    }
    out += row("Soft-reboot", n, e.softRebootCapable ? "yes" : "no");
    if (slot === "staged") out += row("Download-only", n, e.downloadOnly ? "yes" : "no");
  }
  return out;
}

/** The human-readable `bootc status` text. */
export function humanStatus(host: { [key: string]: Json }, verbose = false): string {
  const status = host.status as { [key: string]: Json };
  if (!status.booted) return "System is not deployed via bootc.\n";
  const parts: string[] = [];
  for (const slot of ["staged", "booted", "rollback"] as const) {
    if (status[slot]) parts.push(renderSlot(slot, status[slot], host, verbose));
  }
  for (const other of (status.otherDeployments as Json[] | undefined) ?? []) {
    parts.push(renderSlot("other", other, host, verbose));
  }
  return parts.join("\n");
}
