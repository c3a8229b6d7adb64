/**
 * The six effective states and the "runs the target" test now live in the one
 * node classification, `lib/api/node_state.ts`; this module re-exports them for
 * the controller's older importers.
 *
 * @module
 */
export {
  daemonProgress as effectiveState,
  type DesiredImage,
  EffectiveState,
  entryMatches,
} from "../../lib/api/node_state.ts";
