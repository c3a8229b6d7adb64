/**
 * The YAML parser of kubeconfig files, on its own: the daemon's build (tools/build.ts) bundles
 * it as `yaml_parser.js` beside the daemon's bundle, which then holds no YAML parser (see
 * lib/kube/config.ts, `YAML_PARSER_BUNDLE`).
 *
 * @module
 */
export { parse } from "yaml";
