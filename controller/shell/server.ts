/**
 * The controller's HTTP endpoints: `/metrics` (Prometheus text format),
 * `/healthz` (the process serves) and `/readyz` (caches synced, whether
 * leading or standing by).
 *
 * @module
 */
import { type Logger, silentLogger } from "../../lib/log.ts";
import { METRICS_CONTENT_TYPE, type Registry } from "./metrics.ts";

/** What the handler reports on. */
export interface Probes {
  metrics: Registry;
  /** True when the controller can take or keep leadership (caches synced). */
  ready(): boolean;
}

/** Handles one request (pure apart from reading the probes). */
export function handleRequest(req: Request, probes: Probes): Response {
  const path = new URL(req.url).pathname;
  if (req.method !== "GET" && req.method !== "HEAD") {
    return new Response("method not allowed\n", { status: 405 });
  }
  switch (path) {
    case "/metrics":
      return new Response(probes.metrics.render(), {
        headers: { "content-type": METRICS_CONTENT_TYPE },
      });
    case "/healthz":
      return new Response("ok\n");
    case "/readyz":
      return probes.ready()
        ? new Response("ok\n")
        : new Response("caches not synced\n", { status: 503 });
    default:
      return new Response("not found\n", { status: 404 });
  }
}

/** Splits ":8080", "0.0.0.0:8080" or "[::1]:8080" into hostname and port. */
export function parseListenAddress(addr: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  if (!m) throw new Error(`invalid listen address ${JSON.stringify(addr)} (want [host]:port)`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`invalid port in ${JSON.stringify(addr)}`);
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port };
}

/** Options of {@linkcode startServer}. */
export interface ServerOptions extends Probes {
  /** Listen address, e.g. ":8080". */
  addr: string;
  /** Stops the server. */
  signal: AbortSignal;
  logger?: Logger;
}

/** A running server. */
export interface RunningServer {
  /** The bound address (port 0 picks a free one). */
  addr: Deno.NetAddr;
  /** Resolves once the server has shut down. */
  finished: Promise<void>;
}

/** Serves the endpoints until the signal aborts. */
export function startServer(options: ServerOptions): RunningServer {
  const { hostname, port } = parseListenAddress(options.addr);
  const log = options.logger ?? silentLogger;
  const server = Deno.serve({
    hostname,
    port,
    signal: options.signal,
    onListen: (a) => log.info("serving metrics and probes", { addr: `${a.hostname}:${a.port}` }),
  }, (req) => handleRequest(req, options));
  return { addr: server.addr as Deno.NetAddr, finished: server.finished };
}
