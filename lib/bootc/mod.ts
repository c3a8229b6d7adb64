/**
 * The bootc host layer: types and a validating parser for `bootc status`,
 * version/capability detection, digest matching, and the executor that runs
 * bootc in the host with time limits.
 *
 * @module
 */
export * from "./types.ts";
export * from "./parse.ts";
export * from "./image_ref.ts";
export * from "./version.ts";
export * from "./command.ts";
export * from "./executor.ts";
export * from "./host_namespace.ts";
