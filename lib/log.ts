/**
 * JSON-lines logging: one object per line on stderr with `time`, `level`,
 * `msg` and the logger's fields (for example `component` and `node`).
 *
 * @module
 */

/** Log levels, in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A structured logger. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  with(fields: Record<string, unknown>): Logger;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Lowest level written (default: `LOG_LEVEL` env or "info"). */
  level?: LogLevel;
  /** Fields added to every line. */
  fields?: Record<string, unknown>;
  /** Where lines go (default: stderr). */
  write?: (line: string) => void;
}

const encoder = new TextEncoder();

function defaultLevel(): LogLevel {
  try {
    const env = Deno.env.get("LOG_LEVEL");
    if (env && env in SEVERITY) return env as LogLevel;
  } catch {
    // No env permission: keep the default.
  }
  return "info";
}

/** Creates a JSON-lines logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? defaultLevel();
  const write = options.write ?? ((line: string) => Deno.stderr.writeSync(encoder.encode(line)));
  const base = options.fields ?? {};
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (SEVERITY[lvl] < SEVERITY[level]) return;
    const record: Record<string, unknown> = {
      time: new Date().toISOString(),
      level: lvl,
      msg,
      ...base,
    };
    for (const [k, v] of Object.entries(fields ?? {})) {
      record[k] = v instanceof Error ? v.message : v;
    }
    write(JSON.stringify(record) + "\n");
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    with: (fields) => createLogger({ level, write, fields: { ...base, ...fields } }),
  };
}

/** A logger that discards everything, for tests. */
export const silentLogger: Logger = createLogger({ write: () => {} });
