/**
 * A "registry" that accepts TCP connections and never answers: the worst kind
 * of broken registry (a firewall that blackholes, a wedged proxy), where a
 * client learns nothing until its own timeout fires. It reads and discards
 * what clients send, so their writes never block, and closes every connection
 * on {@linkcode HangingRegistry.stop}.
 *
 * @module
 */

/** A running hanging listener. */
export interface HangingRegistry {
  /** `127.0.0.1:PORT`, the registry part of image references. */
  readonly host: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections currently open (clients that have not given up yet). */
  readonly open: number;
  /** Closes the listener and every connection; resolves once all are closed. */
  stop(): Promise<void>;
  /** Same as {@linkcode HangingRegistry.stop}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a listener on 127.0.0.1 that accepts connections and never answers. */
export function startHangingRegistry(): HangingRegistry {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const connections = new Set<Deno.Conn>();
  const readers = new Set<Promise<void>>();
  let accepted = 0;
  let stopped = false;

  const swallow = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(16 * 1024);
    try {
      // Read until the client gives up (EOF) or stop() closes the connection.
      while ((await conn.read(buf)) !== null) { /* discard */ }
    } catch {
      // Closed under us by stop(), or reset by the client.
    } finally {
      if (connections.delete(conn)) {
        try {
          conn.close();
        } catch { /* already closed */ }
      }
    }
  };

  const acceptLoop = (async () => {
    try {
      for await (const conn of listener) {
        accepted++;
        if (stopped) {
          conn.close();
          continue;
        }
        connections.add(conn);
        const reader = swallow(conn);
        readers.add(reader);
        reader.finally(() => readers.delete(reader));
      }
    } catch {
      // The listener was closed.
    }
  })();

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    listener.close();
    await acceptLoop;
    for (const conn of connections) {
      connections.delete(conn);
      try {
        conn.close();
      } catch { /* already closed */ }
    }
    await Promise.all(readers);
  };

  return {
    host: `127.0.0.1:${port}`,
    get accepted() {
      return accepted;
    },
    get open() {
      return connections.size;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
