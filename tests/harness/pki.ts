/**
 * Test PKI for the control plane, made with the `openssl` CLI: a CA, an API
 * server serving certificate, an admin client certificate (group
 * `system:masters`) and the service-account token signing key pair. All
 * certificates are X.509 v3 (`Deno.createHttpClient` rejects v1) and all keys
 * ECDSA P-256 (fast to generate; Go and rustls accept them).
 *
 * @module
 */

/** Paths of the generated PEM files. */
export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  /** Private key that signs service-account tokens. */
  serviceAccountKey: string;
  /** Public half of {@linkcode Pki.serviceAccountKey}. */
  serviceAccountPub: string;
}

/** Options of {@linkcode generatePki}. */
export interface GeneratePkiOptions {
  /** Folder for the files (created). */
  dir: string;
  /** IP subject alternative names of the serving certificate (default 127.0.0.1 and 10.0.0.1). */
  serverIps?: string[];
  /** DNS subject alternative names of the serving certificate. */
  serverDnsNames?: string[];
  /** Validity in days (default 30). */
  days?: number;
}

/** A certificate subject and its extensions, rendered into an openssl config. */
export interface CertProfile {
  commonName: string;
  organizations?: string[];
  ca?: boolean;
  /** "serverAuth", "clientAuth" (ignored for a CA). */
  extendedKeyUsage?: string[];
  ips?: string[];
  dnsNames?: string[];
}

/** The default DNS names of the API server serving certificate. */
export const DEFAULT_SERVER_DNS_NAMES = [
  "localhost",
  "kubernetes",
  "kubernetes.default",
  "kubernetes.default.svc",
  "kubernetes.default.svc.cluster.local",
];

/** Renders an openssl `req` config with the profile's subject and v3 extensions in `[ext]`. */
export function opensslConfig(profile: CertProfile): string {
  const dn = [`CN = ${profile.commonName}`];
  (profile.organizations ?? []).forEach((o, i) => dn.push(`${i}.O = ${o}`));
  const ext = profile.ca
    ? [
      "basicConstraints = critical, CA:TRUE",
      "keyUsage = critical, keyCertSign, cRLSign, digitalSignature",
      "subjectKeyIdentifier = hash",
    ]
    : [
      "basicConstraints = critical, CA:FALSE",
      "keyUsage = critical, digitalSignature",
      "subjectKeyIdentifier = hash",
      "authorityKeyIdentifier = keyid",
    ];
  if (!profile.ca && profile.extendedKeyUsage?.length) {
    ext.push(`extendedKeyUsage = ${profile.extendedKeyUsage.join(", ")}`);
  }
  const sans = [
    ...(profile.ips ?? []).map((ip) => `IP:${ip}`),
    ...(profile.dnsNames ?? []).map((name) => `DNS:${name}`),
  ];
  if (sans.length) ext.push(`subjectAltName = ${sans.join(", ")}`);
  return [
    "[req]",
    "prompt = no",
    "distinguished_name = dn",
    "[dn]",
    ...dn,
    "[ext]",
    ...ext,
    "",
  ].join("\n");
}

/** Runs openssl, throwing with its stderr on failure. */
export async function openssl(args: string[], options: { cwd?: string } = {}): Promise<string> {
  const out = await new Deno.Command("openssl", {
    args,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `openssl ${args.join(" ")} failed (${out.code}): ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}

async function generateKey(path: string): Promise<void> {
  await openssl([
    "genpkey",
    "-algorithm",
    "EC",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-out",
    path,
  ]);
  await Deno.chmod(path, 0o600);
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // keep it positive
  return "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Issues a self-signed CA certificate for `keyPath`. */
export async function issueCa(
  options: { dir: string; name: string; profile: CertProfile; days: number },
): Promise<{ cert: string; key: string }> {
  const key = `${options.dir}/${options.name}.key`;
  const cert = `${options.dir}/${options.name}.crt`;
  const cnf = `${options.dir}/${options.name}.cnf`;
  await generateKey(key);
  await Deno.writeTextFile(cnf, opensslConfig({ ...options.profile, ca: true }));
  await openssl([
    "req",
    "-x509",
    "-new",
    "-config",
    cnf,
    "-extensions",
    "ext",
    "-key",
    key,
    "-sha256",
    "-days",
    String(options.days),
    "-set_serial",
    randomSerial(),
    "-out",
    cert,
  ]);
  return { cert, key };
}

/** Issues a leaf certificate signed by the CA. */
export async function issueLeaf(
  options: {
    dir: string;
    name: string;
    profile: CertProfile;
    days: number;
    ca: { cert: string; key: string };
  },
): Promise<{ cert: string; key: string }> {
  const key = `${options.dir}/${options.name}.key`;
  const cert = `${options.dir}/${options.name}.crt`;
  const csr = `${options.dir}/${options.name}.csr`;
  const cnf = `${options.dir}/${options.name}.cnf`;
  await generateKey(key);
  await Deno.writeTextFile(cnf, opensslConfig({ ...options.profile, ca: false }));
  await openssl(["req", "-new", "-config", cnf, "-key", key, "-out", csr]);
  await openssl([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    options.ca.cert,
    "-CAkey",
    options.ca.key,
    "-set_serial",
    randomSerial(),
    "-sha256",
    "-days",
    String(options.days),
    "-extfile",
    cnf,
    "-extensions",
    "ext",
    "-out",
    cert,
  ]);
  await Deno.remove(csr);
  return { cert, key };
}

/** Generates the control plane PKI into `options.dir`. */
export async function generatePki(options: GeneratePkiOptions): Promise<Pki> {
  const dir = options.dir;
  const days = options.days ?? 30;
  await Deno.mkdir(dir, { recursive: true });
  const serviceAccountKey = `${dir}/sa.key`;
  const serviceAccountPub = `${dir}/sa.pub`;
  const saKey = (async () => {
    await generateKey(serviceAccountKey);
    await openssl(["pkey", "-in", serviceAccountKey, "-pubout", "-out", serviceAccountPub]);
  })();
  const ca = await issueCa({
    dir,
    name: "ca",
    days,
    profile: { commonName: "bootc-operator-test-ca" },
  });
  const [server, admin] = await Promise.all([
    issueLeaf({
      dir,
      name: "apiserver",
      days,
      ca,
      profile: {
        commonName: "kube-apiserver",
        extendedKeyUsage: ["serverAuth"],
        ips: options.serverIps ?? ["127.0.0.1", "10.0.0.1"],
        dnsNames: options.serverDnsNames ?? DEFAULT_SERVER_DNS_NAMES,
      },
    }),
    issueLeaf({
      dir,
      name: "admin",
      days,
      ca,
      profile: {
        commonName: "bootc-operator-test-admin",
        organizations: ["system:masters"],
        extendedKeyUsage: ["clientAuth"],
      },
    }),
    saKey,
  ]);
  return {
    dir,
    caCert: ca.cert,
    caKey: ca.key,
    serverCert: server.cert,
    serverKey: server.key,
    adminCert: admin.cert,
    adminKey: admin.key,
    serviceAccountKey,
    serviceAccountPub,
  };
}
