/**
 * Container image references parsed by the Docker reference grammar
 * (`[domain[:port]/]path[:tag][@digest]`), normalized the way `docker pull`
 * and containers/image do: a missing domain means Docker Hub, one-segment Hub
 * names get `library/`, and neither tag nor digest means `:latest`.
 *
 * @module
 */

/** The domain users write for Docker Hub. */
export const DOCKER_HUB_DOMAIN = "docker.io";
/** The host that actually serves the Docker Hub registry API. */
export const DOCKER_HUB_REGISTRY = "registry-1.docker.io";
/** Other spellings of Docker Hub, treated like {@linkcode DOCKER_HUB_DOMAIN}. */
export const DOCKER_HUB_ALIASES: readonly string[] = [
  "docker.io",
  "index.docker.io",
  "registry-1.docker.io",
  "registry.hub.docker.com",
];

const MAX_NAME_LENGTH = 255;
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN_RE = new RegExp(
  `^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?$`,
);
const PATH_COMPONENT_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const DIGEST_RE = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]+$/;
/** Hex lengths of the digest algorithms whose length is known. */
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

/** Thrown by {@linkcode parseImageReference} with a message that says what is wrong. */
export class ImageReferenceError extends Error {
  /** The rejected input. */
  readonly input: string;

  /** Creates the error for `input`; `problem` says what is wrong with it. */
  constructor(input: string, problem: string) {
    super(`invalid image reference ${JSON.stringify(input)}: ${problem}`);
    this.name = "ImageReferenceError";
    this.input = input;
  }
}

/** A parsed, normalized image reference. */
export interface ImageReference {
  /** The `host[:port]` to contact (Docker Hub spellings become `registry-1.docker.io`). */
  readonly registry: string;
  /** The domain as the user wrote it (`docker.io` when omitted); kept in {@linkcode ImageReference.pinned}. */
  readonly domain: string;
  /** The repository path inside the registry, e.g. `library/fedora` or `org/os`. */
  readonly repository: string;
  /** The tag; `latest` when the input had neither tag nor digest. */
  readonly tag?: string;
  /** The digest, e.g. `sha256:…`, when the input had one. */
  readonly digest?: string;
  /** `domain/repository[:tag][@digest]`. */
  toString(): string;
  /** `domain/repository@digest`: the reference pinned to `digest`, without the tag. */
  pinned(digest: string): string;
}

/** Validates a bare digest (`algorithm:hex`) and returns why it is invalid, or undefined. */
export function digestProblem(digest: string): string | undefined {
  if (!DIGEST_RE.test(digest)) {
    return `digest ${
      JSON.stringify(digest)
    } is not of the form algorithm:hex (e.g. sha256:<64 hex>)`;
  }
  const [algorithm, hex] = digest.split(":", 2);
  const expected = DIGEST_HEX_LENGTH[algorithm];
  if (expected !== undefined && hex.length !== expected) {
    return `a ${algorithm} digest has ${expected} hex characters, got ${hex.length}`;
  }
  if (expected !== undefined && hex !== hex.toLowerCase()) {
    return `the ${algorithm} digest must be lower-case hex`;
  }
  if (hex.length < 32) return `the digest has ${hex.length} hex characters, at least 32 are needed`;
  return undefined;
}

/** True when `s` looks like a registry domain rather than the first path segment. */
function looksLikeDomain(s: string): boolean {
  return s.includes(".") || s.includes(":") || s === "localhost" || s !== s.toLowerCase();
}

/** Parses an image reference; throws {@linkcode ImageReferenceError} when it is invalid. */
export function parseImageReference(input: string): ImageReference {
  const fail = (problem: string): never => {
    throw new ImageReferenceError(input, problem);
  };
  if (input.length === 0) fail("it is empty");
  if (input.trim() !== input) fail("it has leading or trailing whitespace");
  if (/\s/.test(input)) fail("it contains whitespace");
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(input)) {
    fail("drop the URL scheme; write host/repository:tag");
  }

  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (digest.length === 0) {
      fail("nothing follows '@' (expected a digest such as sha256:<64 hex>)");
    }
    const problem = digestProblem(digest);
    if (problem) fail(problem);
  }

  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (tag.length === 0) fail("nothing follows ':' (expected a tag)");
    if (!TAG_RE.test(tag)) {
      fail(
        `tag ${
          JSON.stringify(tag)
        } is invalid (letters, digits, '_', '.', '-', not starting with '.' or '-', at most 128)`,
      );
    }
  }
  if (rest.length === 0) fail("the repository name is missing");

  let domain = DOCKER_HUB_DOMAIN;
  let path = rest;
  const slash = rest.indexOf("/");
  if (slash >= 0 && looksLikeDomain(rest.slice(0, slash))) {
    domain = rest.slice(0, slash);
    path = rest.slice(slash + 1);
    if (!DOMAIN_RE.test(domain)) fail(`registry host ${JSON.stringify(domain)} is invalid`);
    const port = domain.match(/:([0-9]+)$/)?.[1];
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
      fail(`port ${port} is out of range`);
    }
  } else if (slash < 0 && /[A-Z]/.test(rest)) {
    fail("repository name must be lowercase");
  }
  if (path.length === 0) fail("the repository name is missing");
  for (const component of path.split("/")) {
    if (component.length === 0) {
      fail("the repository path has an empty segment ('//' or a trailing '/')");
    }
    if (!PATH_COMPONENT_RE.test(component)) {
      if (component !== component.toLowerCase()) fail("repository name must be lowercase");
      fail(
        `repository path segment ${
          JSON.stringify(component)
        } is invalid (lower-case letters and digits, separated by '.', '_', '__' or '-')`,
      );
    }
  }
  const isHub = DOCKER_HUB_ALIASES.includes(domain.toLowerCase());
  if (isHub && !path.includes("/")) path = `library/${path}`;
  if (domain.length + 1 + path.length > MAX_NAME_LENGTH) {
    fail(`the name is longer than ${MAX_NAME_LENGTH} characters`);
  }
  if (tag === undefined && digest === undefined) tag = "latest";

  return makeReference({
    registry: isHub ? DOCKER_HUB_REGISTRY : domain.toLowerCase(),
    domain,
    repository: path,
    tag,
    digest,
  });
}

function makeReference(
  fields: { registry: string; domain: string; repository: string; tag?: string; digest?: string },
): ImageReference {
  const name = `${fields.domain}/${fields.repository}`;
  const ref: ImageReference = {
    registry: fields.registry,
    domain: fields.domain,
    repository: fields.repository,
    ...(fields.tag !== undefined ? { tag: fields.tag } : {}),
    ...(fields.digest !== undefined ? { digest: fields.digest } : {}),
    toString: () =>
      name + (fields.tag !== undefined ? `:${fields.tag}` : "") +
      (fields.digest !== undefined ? `@${fields.digest}` : ""),
    pinned: (digest: string) => {
      const problem = digestProblem(digest);
      if (problem) throw new ImageReferenceError(`${name}@${digest}`, problem);
      return `${name}@${digest}`;
    },
  };
  return Object.freeze(ref);
}

/** Returns `ref` with a different tag or digest, e.g. to address one manifest of an index. */
export function withDigest(ref: ImageReference, digest: string): ImageReference {
  return makeReference({
    registry: ref.registry,
    domain: ref.domain,
    repository: ref.repository,
    digest,
  });
}
