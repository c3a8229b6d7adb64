/**
 * A small Docker registry token service for tests: it checks Basic
 * credentials and issues ES256 JWTs that the real distribution registry
 * accepts (`auth.token` with `rootcertbundle` = {@linkcode TokenIssuer.certPath}).
 * The token header carries the signing certificate in `x5c`; the certificate
 * is self-signed, so the registry trusts it directly from the bundle.
 *
 * Protocol: https://distribution.github.io/distribution/spec/auth/token/
 *
 * @module
 */
import { issueCa } from "./pki.ts";

/** One entry of a token's `access` claim. */
export interface TokenAccess {
  /** "repository" or "registry". */
  type: string;
  /** Repository path, or "catalog". */
  name: string;
  /** "pull", "push", "*". */
  actions: string[];
}

/** Options of {@linkcode startTokenIssuer}. */
export interface TokenIssuerOptions {
  /** Folder for the key and certificate (must exist). */
  dir: string;
  /** username → password of users who get pull and push on every repository. */
  users: Record<string, string>;
  /** The registry's `service` name (the token audience). */
  service: string;
  /** The `iss` claim (default "bootc-operator-test-issuer"). */
  issuer?: string;
  /** Token lifetime reported as `expires_in` and put into `exp` (default 300 s). */
  lifetimeSeconds?: number;
}

/** A token request as the issuer saw it. */
export interface TokenRequestRecord {
  /** The authenticated user, or undefined for anonymous requests. */
  user?: string;
  /** The requested scopes. */
  scopes: string[];
  /** The HTTP status answered. */
  status: number;
}

/** A running token service. */
export interface TokenIssuer {
  /** The URL to put in the registry's `auth.token.realm`. */
  readonly realm: string;
  /** The `service` (audience). */
  readonly service: string;
  /** The `iss` claim. */
  readonly issuer: string;
  /** PEM file of the signing certificate, for `auth.token.rootcertbundle`. */
  readonly certPath: string;
  /** Every token request so far, oldest first. */
  readonly requests: readonly TokenRequestRecord[];
  /** Signs a token for `subject` with `access`, without HTTP (for the harness's own pushes). */
  mint(subject: string, access: TokenAccess[]): Promise<string>;
  /** Stops the HTTP server. */
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

function base64url(bytes: Uint8Array | string): string {
  const raw = typeof bytes === "string" ? encoder.encode(bytes) : bytes;
  let binary = "";
  for (const b of raw) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function pemBody(pem: string): string {
  return pem.replace(/-----(BEGIN|END) [A-Z ]+-----/g, "").replace(/\s+/g, "");
}

function pemToBytes(pem: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(pemBody(pem)), (c) => c.charCodeAt(0));
}

/** Parses `repository:name:pull,push` (names may contain ':' only via a port-less path). */
export function parseScope(scope: string): TokenAccess | undefined {
  const first = scope.indexOf(":");
  const last = scope.lastIndexOf(":");
  if (first < 0 || last <= first) return undefined;
  return {
    type: scope.slice(0, first),
    name: scope.slice(first + 1, last),
    actions: scope.slice(last + 1).split(",").filter((a) => a.length > 0),
  };
}

function decodeBasic(header: string | null): { user: string; password: string } | undefined {
  if (!header?.toLowerCase().startsWith("basic ")) return undefined;
  try {
    const decoded = atob(header.slice(6).trim());
    const colon = decoded.indexOf(":");
    if (colon < 0) return undefined;
    return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  } catch {
    return undefined;
  }
}

/** Starts the token service on a free loopback port. */
export async function startTokenIssuer(options: TokenIssuerOptions): Promise<TokenIssuer> {
  const issuerName = options.issuer ?? "bootc-operator-test-issuer";
  const lifetime = options.lifetimeSeconds ?? 300;
  const { cert, key } = await issueCa({
    dir: options.dir,
    name: "token-signer",
    days: 2,
    profile: { commonName: "bootc-operator test token signer" },
  });
  const certDer = pemToBytes(await Deno.readTextFile(cert));
  const signingKey = await crypto.subtle.importKey(
    "pkcs8",
    pemToBytes(await Deno.readTextFile(key)),
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["sign"],
  );
  const header = base64url(JSON.stringify({
    typ: "JWT",
    alg: "ES256",
    // x5c uses standard base64 (not base64url), per RFC 7515.
    x5c: [btoa(String.fromCharCode(...certDer))],
  }));

  const mint = async (subject: string, access: TokenAccess[]): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    const claims = base64url(JSON.stringify({
      iss: issuerName,
      sub: subject,
      aud: options.service,
      exp: now + lifetime,
      nbf: now - 5,
      iat: now,
      jti: crypto.randomUUID(),
      access,
    }));
    const signature = await crypto.subtle.sign(
      { name: "ECDSA", hash: "SHA-256" },
      signingKey,
      encoder.encode(`${header}.${claims}`),
    );
    return `${header}.${claims}.${base64url(new Uint8Array(signature))}`;
  };

  const requests: TokenRequestRecord[] = [];
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json" },
    });

  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const scopes = url.searchParams.getAll("scope").flatMap((s) => s.split(" ")).filter((s) => s);
    if (url.pathname !== "/token") return json(404, { details: "not found" });
    const basic = decodeBasic(request.headers.get("authorization"));
    if (basic && options.users[basic.user] !== basic.password) {
      requests.push({ user: basic.user, scopes, status: 401 });
      return json(401, { details: "incorrect username or password" });
    }
    if (url.searchParams.get("service") !== options.service) {
      requests.push({ ...(basic ? { user: basic.user } : {}), scopes, status: 400 });
      return json(400, { details: `unknown service ${url.searchParams.get("service")}` });
    }
    // Anonymous callers get a token without access, as public token services do for private repos.
    const access = basic
      ? scopes.map(parseScope).filter((a): a is TokenAccess => a !== undefined).map((a) => ({
        ...a,
        actions: a.actions.filter((x) => ["pull", "push", "*"].includes(x)),
      }))
      : [];
    const token = await mint(basic?.user ?? "", access);
    requests.push({ ...(basic ? { user: basic.user } : {}), scopes, status: 200 });
    return json(200, {
      token,
      access_token: token,
      expires_in: lifetime,
      issued_at: new Date().toISOString(),
    });
  };

  const { promise: listening, resolve: onListen } = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen }, handler);
  const addr = await listening;
  let stopped: Promise<void> | undefined;
  return {
    realm: `http://127.0.0.1:${addr.port}/token`,
    service: options.service,
    issuer: issuerName,
    certPath: cert,
    requests,
    mint,
    stop: () => {
      stopped ??= server.shutdown().then(() => server.finished);
      return stopped;
    },
  };
}
