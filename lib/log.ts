/**
 * Structured logging: one line per record on stderr with `time`, `level`, `msg` and the
 * logger's fields (for example `component` and `node`), as a JSON object (the default, for log
 * collectors) or as text (`time LEVEL msg key=value ...`, for people at a terminal).
 *
 * `--log-level` and `--log-format` of the controller and the daemon are both parsed here
 * ({@linkcode parseLogLevel}, {@linkcode parseLogFormat}), so their values and errors agree.
 *
 * @module
 */

/** Log levels, in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** How a record is written: a JSON object or a text line. */
export type LogFormat = "json" | "text";

/** Every log level, lowest first. */
export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/** Every log format. */
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

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
  /** How records are written (default "json"). */
  format?: LogFormat;
  /** Fields added to every line. */
  fields?: Record<string, unknown>;
  /** Where lines go (default: stderr). */
  write?: (line: string) => void;
}

/** A `--log-level` or `--log-format` value that is not one of the allowed ones. */
export class LogFlagError extends Error {
  override readonly name = "LogFlagError";
}

function oneOf<T extends string>(flag: string, allowed: readonly T[], text: string): T {
  if ((allowed as readonly string[]).includes(text)) return text as T;
  const list = `${allowed.slice(0, -1).join(", ")} or ${allowed[allowed.length - 1]}`;
  throw new LogFlagError(`${flag}: expected ${list}, not ${JSON.stringify(text)}`);
}

/** Parses a `--log-level` value; anything else is a {@linkcode LogFlagError}. */
export function parseLogLevel(text: string, flag = "--log-level"): LogLevel {
  return oneOf(flag, LOG_LEVELS, text);
}

/** Parses a `--log-format` value; anything else is a {@linkcode LogFlagError}. */
export function parseLogFormat(text: string, flag = "--log-format"): LogFormat {
  return oneOf(flag, LOG_FORMATS, text);
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

function textValue(value: unknown): string {
  if (typeof value === "string" && /^[^\s"=]+$/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

/** One record as a text line: `time LEVEL msg key=value ...` (values quoted when needed). */
export function formatText(record: Record<string, unknown>): string {
  const { time, level, msg, ...fields } = record;
  const head = `${time} ${String(level).toUpperCase().padEnd(5)} ${msg}`;
  const tail = Object.entries(fields).map(([k, v]) => `${k}=${textValue(v)}`);
  return [head, ...tail].join(" ");
}

/** Creates a logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? defaultLevel();
  const format = options.format ?? "json";
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
    write((format === "text" ? formatText(record) : JSON.stringify(record)) + "\n");
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    with: (fields) => createLogger({ level, format, write, fields: { ...base, ...fields } }),
  };
}

/** A logger that discards everything, for tests. */
export const silentLogger: Logger = createLogger({ write: () => {} });
