/**
 * Colour, or not: ANSI colours only on a terminal and only when `NO_COLOR` is
 * unset or empty (https://no-color.org) and `--no-color` was not given. Every
 * piece of meaning also has a glyph or a word, so nothing is lost without colour.
 *
 * @module
 */

/** Text styling functions; identity functions when colour is off. */
export interface Style {
  readonly color: boolean;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  blue(text: string): string;
  red(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/** Inputs of {@linkcode colorEnabled}. */
export interface ColorInput {
  /** stdout is a terminal. */
  isTerminal: boolean;
  /** The `NO_COLOR` environment variable. */
  noColorEnv: string | undefined;
  /** `--no-color` was given. */
  noColorFlag?: boolean;
}

/** True when output should be coloured. */
export function colorEnabled(input: ColorInput): boolean {
  if (input.noColorFlag) return false;
  if (input.noColorEnv !== undefined && input.noColorEnv !== "") return false;
  return input.isTerminal;
}

const sgr = (open: number, close: number) => (text: string) =>
  text === "" ? text : `\x1b[${open}m${text}\x1b[${close}m`;

/** A {@linkcode Style} with colours on or off. */
export function createStyle(color: boolean): Style {
  const plain = (text: string) => text;
  return {
    color,
    green: color ? sgr(32, 39) : plain,
    yellow: color ? sgr(33, 39) : plain,
    cyan: color ? sgr(36, 39) : plain,
    blue: color ? sgr(34, 39) : plain,
    red: color ? sgr(31, 39) : plain,
    dim: color ? sgr(2, 22) : plain,
    bold: color ? sgr(1, 22) : plain,
  };
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** `text` without ANSI escape sequences. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/** The number of terminal columns `text` takes (escape sequences take none). */
export function visibleLength(text: string): number {
  return [...stripAnsi(text)].length;
}
