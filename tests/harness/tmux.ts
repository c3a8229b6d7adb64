/**
 * A private tmux server for tests that need a real terminal: its own socket
 * (no user config, UTF-8 whatever the locale), commands that fail loudly, and
 * a screen poll that shows the last screen when it gives up.
 *
 * @module
 */
import { waitFor } from "./wait.ts";

const decoder = new TextDecoder();

/** Options of {@linkcode Tmux}. */
export interface TmuxOptions {
  /** The socket's name prefix (a unique suffix is added). */
  name: string;
  /** The whole environment of tmux and what it runs (may also be set later, see `env`). */
  env?: Record<string, string>;
}

/** See the module documentation. */
export class Tmux {
  /** The socket name (`tmux -L`). */
  readonly socket: string;
  /** The whole environment of tmux and what it runs, read at each command. */
  env: Record<string, string>;

  /** A server that starts with the first `new-session`. */
  constructor(options: TmuxOptions) {
    this.socket = `${options.name}-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
    this.env = options.env ?? {};
  }

  /** Runs `tmux ARGS` on this server; resolves with its output, throws with its stderr. */
  async run(...args: string[]): Promise<string> {
    const out = await new Deno.Command("tmux", {
      args: ["-u", "-L", this.socket, "-f", "/dev/null", ...args],
      env: this.env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`tmux ${args[0]} failed: ${decoder.decode(out.stderr).trim()}`);
    }
    return decoder.decode(out.stdout);
  }

  /** The screen of `pane` as text (`escapes`: with its colour codes). */
  capture(pane: string, escapes = false): Promise<string> {
    return this.run("capture-pane", "-p", ...(escapes ? ["-e"] : []), "-t", pane);
  }

  /**
   * Polls `pane` until `done(screen)` holds; resolves with that screen. On
   * timeout the error shows the last screen.
   */
  async waitScreen(
    pane: string,
    done: (screen: string) => boolean,
    options: { what: string; timeoutMs: number },
  ): Promise<string> {
    let last = "";
    try {
      return await waitFor(async () => {
        last = await this.capture(pane);
        return done(last) ? last : undefined;
      }, { timeoutMs: options.timeoutMs, intervalMs: 250, message: options.what });
    } catch (e) {
      throw new Error(`${(e as Error).message}\nthe screen showed:\n${last}`);
    }
  }

  /** Stops the server and everything it runs (never throws). */
  async close(): Promise<void> {
    await new Deno.Command("tmux", { args: ["-L", this.socket, "kill-server"], stderr: "null" })
      .output().catch(() => {});
  }
}
