/**
 * The bootc host simulator: an executable stand-in for `bootc` (and a little `systemctl`) backed
 * by a state folder, for the daemon's tests and the demo. See README.md.
 *
 * @module
 */

export {
  type AuthJson,
  type CreateHostOptions,
  SimulatedHost,
  type SimulatedHostSnapshot,
} from "./host.ts";
export type { ApplyInvocation, ApplyRecord, ApplyVerdict } from "./apply_gate.ts";
export type { Deployment, HostState, PulledImage, RebootRequest, SimSettings } from "./model.ts";
export type { SystemState, UnitsState, UnitState } from "./systemctl.ts";
export { AUTO_UPDATE_TIMER } from "./systemctl.ts";
