/**
 * Kubernetes name rules (label keys and values, DNS-1123 names) in one place,
 * as ECMAScript checks with the reasons Kubernetes gives and as CEL expressions
 * for the CRDs' `x-kubernetes-validations`. Every user string the operator turns
 * into a label value, a label selector or an object reference is checked against
 * these, at admission (CRD) and again in the controller (a pool stored before a
 * rule existed still gets a clear InvalidSpec instead of silently matching nothing).
 *
 * The patterns are RE2 and ECMAScript compatible and contain no `'`, so they can
 * be embedded in CEL raw strings.
 *
 * @module
 */
import { LABEL_POOL } from "./constants.ts";

/** Longest label value, label key name part and DNS-1123 label. */
export const MAX_LABEL_VALUE_LENGTH = 63;
/** Longest DNS-1123 subdomain, and so the longest label key prefix. */
export const MAX_DNS1123_SUBDOMAIN_LENGTH = 253;
/** Longest label key: a 253-character prefix, `/` and a 63-character name. */
export const MAX_LABEL_KEY_LENGTH = MAX_DNS1123_SUBDOMAIN_LENGTH + 1 + MAX_LABEL_VALUE_LENGTH;

const DNS_LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = `${DNS_LABEL}(?:\\.${DNS_LABEL})*`;
const LABEL_NAME = "[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";

/** A DNS-1123 label (a namespace name), without its length limit of 63. */
export const DNS1123_LABEL_PATTERN = `^${DNS_LABEL}$`;
/** A DNS-1123 subdomain (most object names), without its length limit of 253. */
export const DNS1123_SUBDOMAIN_PATTERN = `^${DNS_SUBDOMAIN}$`;
/** A label value: empty, or up to 63 of `[A-Za-z0-9-_.]` starting and ending alphanumeric. */
export const LABEL_VALUE_PATTERN = "^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$";
/**
 * A label key: an optional DNS-1123 subdomain prefix and `/`, then a name of up to 63
 * of `[A-Za-z0-9-_.]` starting and ending alphanumeric. The prefix's own limit of 253
 * characters is checked separately ({@linkcode LABEL_KEY_PREFIX_LENGTH_PATTERN}).
 */
export const LABEL_KEY_PATTERN = `^(?:${DNS_SUBDOMAIN}/)?${LABEL_NAME}$`;
/** True for a key without `/` or whose prefix (before the `/`) has at most 253 characters. */
export const LABEL_KEY_PREFIX_LENGTH_PATTERN = "^(?:[^/]{1,253}/)?[^/]*$";

const dnsLabelRe = new RegExp(DNS1123_LABEL_PATTERN);
const dnsSubdomainRe = new RegExp(DNS1123_SUBDOMAIN_PATTERN);
const labelNameRe = new RegExp(`^${LABEL_NAME}$`);

/** What a valid label value looks like, for messages. */
export const LABEL_VALUE_RULE = "at most 63 characters of letters, digits, '-', '_' and '.', " +
  "starting and ending with a letter or digit (or empty)";
/** What a valid label key looks like, for messages. */
export const LABEL_KEY_RULE = "an optional DNS subdomain prefix of at most 253 characters " +
  "and '/', then a name of at most 63 letters, digits, '-', '_' and '.' that starts and " +
  "ends with a letter or digit (for example zone or example.com/role)";

/** Why `value` is not a valid label value, or undefined when it is. */
export function labelValueError(value: string): string | undefined {
  if (value.length > MAX_LABEL_VALUE_LENGTH) {
    return `must be at most ${MAX_LABEL_VALUE_LENGTH} characters (it has ${value.length})`;
  }
  if (value !== "" && !labelNameRe.test(value)) {
    return "must consist of letters, digits, '-', '_' and '.', starting and ending with a " +
      "letter or digit (or be empty)";
  }
  return undefined;
}

/** Why `key` is not a valid label key, or undefined when it is (Kubernetes' qualified name). */
export function labelKeyError(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return "must contain at most one '/' (prefix/name)";
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  if (prefix !== undefined) {
    if (prefix === "") return "must not have an empty prefix before '/'";
    if (prefix.length > MAX_DNS1123_SUBDOMAIN_LENGTH) {
      return `prefix must be at most ${MAX_DNS1123_SUBDOMAIN_LENGTH} characters (it has ` +
        `${prefix.length})`;
    }
    if (!dnsSubdomainRe.test(prefix)) {
      return "prefix must be a DNS subdomain: lowercase letters, digits, '-' and '.', " +
        "starting and ending with a letter or digit";
    }
  }
  if (name === "") return "name part must not be empty";
  if (name.length > MAX_LABEL_VALUE_LENGTH) {
    return `name part must be at most ${MAX_LABEL_VALUE_LENGTH} characters (it has ` +
      `${name.length})`;
  }
  if (!labelNameRe.test(name)) {
    return "name part must consist of letters, digits, '-', '_' and '.', starting and " +
      "ending with a letter or digit";
  }
  return undefined;
}

/** Why `name` is not a DNS-1123 subdomain (a Secret's name), or undefined when it is. */
export function dns1123SubdomainError(name: string): string | undefined {
  if (name.length > MAX_DNS1123_SUBDOMAIN_LENGTH) {
    return `must be at most ${MAX_DNS1123_SUBDOMAIN_LENGTH} characters`;
  }
  if (!dnsSubdomainRe.test(name)) {
    return "must be a DNS subdomain: lowercase letters, digits, '-' and '.', starting and " +
      "ending with a letter or digit";
  }
  return undefined;
}

/** Why `name` is not a DNS-1123 label (a namespace's name), or undefined when it is. */
export function dns1123LabelError(name: string): string | undefined {
  if (name.length > MAX_LABEL_VALUE_LENGTH) {
    return `must be at most ${MAX_LABEL_VALUE_LENGTH} characters`;
  }
  if (!dnsLabelRe.test(name)) {
    return "must be a DNS label: lowercase letters, digits and '-', starting and ending " +
      "with a letter or digit";
  }
  return undefined;
}

/** The CEL condition "`expr` is a valid label key" (`expr` is a string expression). */
export function celIsLabelKey(expr: string): string {
  return `${expr}.matches(r'${LABEL_KEY_PATTERN}') && ` +
    `${expr}.matches(r'${LABEL_KEY_PREFIX_LENGTH_PATTERN}')`;
}

/** The CEL condition "`expr` is a valid label value" (length and characters). */
export function celIsLabelValue(expr: string): string {
  return `${expr}.matches(r'${LABEL_VALUE_PATTERN}')`;
}

/**
 * Why `name` cannot be a BootcNodePool's name, or undefined when it can: the API
 * server already requires a DNS subdomain, and the name is also the value of the
 * `bootc.dev/pool` label on the pool's BootcNodes, so at most 63 characters. The
 * CRD refuses longer names; this is for the controller, for pools stored before.
 */
export function poolNameError(name: string): string | undefined {
  const err = labelValueError(name);
  return err === undefined ? undefined : `metadata.name ${err}: the pool name is the value of ` +
    `the ${LABEL_POOL} label on its BootcNodes`;
}
