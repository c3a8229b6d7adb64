/**
 * Deterministic tar archives for image layers: the same entries always give the same bytes.
 *
 * Every entry has a fixed mtime (the epoch the lock file names), numeric owner ids without user
 * or group names, and a mode chosen by the caller; entries are written sorted by path, parents
 * first, with every parent directory present. Only what image layers need: directories, regular
 * files and symbolic links, in the POSIX ustar format (long paths use its prefix field).
 *
 * @module
 */

/** One member of a layer. */
export type TarEntry =
  | { type: "dir"; path: string; mode: number; uid: number; gid: number }
  | { type: "file"; path: string; mode: number; uid: number; gid: number; data: Uint8Array }
  | { type: "symlink"; path: string; target: string; uid: number; gid: number };

/** Options of {@linkcode Layer}. */
export interface LayerOptions {
  /** The mtime of every entry, in seconds since 1970 (default 0). */
  mtime?: number;
}

const encoder = new TextEncoder();
const BLOCK = 512;

/**
 * A layer's file tree, built up entry by entry and written with {@linkcode Layer.toTar}.
 * Parent directories are added on demand (root-owned, 0755); adding the same path twice is an
 * error unless both entries are equal directories, so two sources can never silently overwrite
 * each other.
 */
export class Layer {
  #entries = new Map<string, TarEntry>();
  #mtime: number;

  /** An empty layer. */
  constructor(options: LayerOptions = {}) {
    this.#mtime = options.mtime ?? 0;
  }

  /** Adds a directory (and its parents). */
  addDir(path: string, options: { mode?: number; uid?: number; gid?: number } = {}): void {
    const p = normalize(path);
    const entry: TarEntry = {
      type: "dir",
      path: p,
      mode: options.mode ?? 0o755,
      uid: options.uid ?? 0,
      gid: options.gid ?? 0,
    };
    const existing = this.#entries.get(p);
    if (existing) {
      if (existing.type === "dir" && sameDir(existing, entry)) return;
      // An implicit parent added earlier may be refined by an explicit directory entry.
      if (existing.type === "dir" && this.#implicit.has(p)) {
        this.#implicit.delete(p);
        this.#entries.set(p, entry);
        return;
      }
      throw new Error(`layer: ${p} added twice`);
    }
    this.#parents(p);
    this.#entries.set(p, entry);
  }

  /** Adds a regular file (and its parent directories). */
  addFile(
    path: string,
    data: Uint8Array,
    options: { mode?: number; uid?: number; gid?: number } = {},
  ): void {
    const p = normalize(path);
    this.#claim(p);
    this.#entries.set(p, {
      type: "file",
      path: p,
      data,
      mode: options.mode ?? 0o644,
      uid: options.uid ?? 0,
      gid: options.gid ?? 0,
    });
  }

  /** Adds a symbolic link `path` → `target` (and the link's parent directories). */
  addSymlink(path: string, target: string): void {
    const p = normalize(path);
    this.#claim(p);
    this.#entries.set(p, { type: "symlink", path: p, target, uid: 0, gid: 0 });
  }

  /** True when `path` is in the layer. */
  has(path: string): boolean {
    return this.#entries.has(normalize(path));
  }

  /** The entries, sorted by path. */
  entries(): TarEntry[] {
    return [...this.#entries.values()].sort((a, b) => compareBytes(a.path, b.path));
  }

  /** The sum of the regular files' sizes. */
  contentBytes(): number {
    let total = 0;
    for (const e of this.#entries.values()) if (e.type === "file") total += e.data.length;
    return total;
  }

  /** The archive: entries sorted by path (byte order), then two zero blocks. */
  toTar(): Uint8Array<ArrayBuffer> {
    return writeTar(this.entries(), this.#mtime);
  }

  #implicit = new Set<string>();

  #claim(p: string): void {
    if (this.#entries.has(p)) throw new Error(`layer: ${p} added twice`);
    this.#parents(p);
  }

  #parents(p: string): void {
    const parts = p.split("/");
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      const existing = this.#entries.get(dir);
      if (existing) {
        if (existing.type !== "dir") throw new Error(`layer: ${dir} is not a directory (${p})`);
        continue;
      }
      this.#entries.set(dir, { type: "dir", path: dir, mode: 0o755, uid: 0, gid: 0 });
      this.#implicit.add(dir);
    }
  }
}

/** Writes `entries` in the given order as a ustar archive with every mtime `mtime`. */
export function writeTar(entries: readonly TarEntry[], mtime = 0): Uint8Array<ArrayBuffer> {
  let size = 2 * BLOCK;
  for (const e of entries) size += BLOCK + (e.type === "file" ? padded(e.data.length) : 0);
  const out = new Uint8Array(size);
  let offset = 0;
  for (const e of entries) {
    out.set(header(e, mtime), offset);
    offset += BLOCK;
    if (e.type === "file") {
      out.set(e.data, offset);
      offset += padded(e.data.length);
    }
  }
  return out;
}

function header(e: TarEntry, mtime: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const name = e.type === "dir" ? `${e.path}/` : e.path;
  const [prefix, base] = splitName(name);
  put(h, 0, 100, base);
  put(h, 100, 8, octal(e.type === "symlink" ? 0o777 : e.mode, 8));
  put(h, 108, 8, octal(e.uid, 8));
  put(h, 116, 8, octal(e.gid, 8));
  put(h, 124, 12, octal(e.type === "file" ? e.data.length : 0, 12));
  put(h, 136, 12, octal(mtime, 12));
  put(h, 148, 8, "        "); // the checksum counts as spaces while it is computed
  put(h, 156, 1, e.type === "file" ? "0" : e.type === "dir" ? "5" : "2");
  if (e.type === "symlink") {
    if (encoder.encode(e.target).length > 100) {
      throw new Error(`tar: link target of ${e.path} longer than 100 bytes`);
    }
    put(h, 157, 100, e.target);
  }
  put(h, 257, 6, "ustar\0");
  put(h, 263, 2, "00");
  put(h, 329, 8, octal(0, 8)); // devmajor
  put(h, 337, 8, octal(0, 8)); // devminor
  put(h, 345, 155, prefix);
  const checksum = h.reduce((sum, b) => sum + b, 0);
  put(h, 148, 8, checksum.toString(8).padStart(6, "0") + "\0 ");
  return h;
}

/** Splits a member name into ustar's prefix (≤ 155 bytes) and name (≤ 100 bytes). */
function splitName(name: string): [string, string] {
  if (encoder.encode(name).length <= 100) return ["", name];
  // Split at a slash such that both parts fit (a trailing slash of a directory stays in name).
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== "/" || i === name.length - 1) continue;
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (encoder.encode(prefix).length <= 155 && encoder.encode(rest).length <= 100) {
      return [prefix, rest];
    }
  }
  throw new Error(`tar: path too long for ustar: ${name}`);
}

function put(h: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = encoder.encode(value);
  if (bytes.length > length) throw new Error(`tar: field too long: ${value}`);
  h.set(bytes, offset);
}

function octal(value: number, length: number): string {
  const text = value.toString(8);
  if (text.length > length - 1) throw new Error(`tar: ${value} does not fit ${length} bytes`);
  return text.padStart(length - 1, "0") + "\0";
}

function padded(n: number): number {
  return Math.ceil(n / BLOCK) * BLOCK;
}

function normalize(path: string): string {
  const p = path.replace(/^\.?\/+/, "").replace(/\/+$/, "");
  if (p === "" || p.split("/").some((s) => s === "" || s === "." || s === "..")) {
    throw new Error(`layer: invalid path ${JSON.stringify(path)}`);
  }
  return p;
}

function sameDir(a: TarEntry, b: TarEntry): boolean {
  return a.type === "dir" && b.type === "dir" && a.mode === b.mode && a.uid === b.uid &&
    a.gid === b.gid;
}

function compareBytes(a: string, b: string): number {
  // Paths here are ASCII; code-unit order is byte order for them.
  return a < b ? -1 : a > b ? 1 : 0;
}
