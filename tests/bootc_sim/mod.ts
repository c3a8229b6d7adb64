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
export {
  BAD_BOOT_LABEL,
  type BadBoot,
  badImageLabels,
  type BootOutcome,
  type BootRecord,
  DEFAULT_BAD_UNIT,
  DEFAULT_REBOOT_LOOP_CRASHES,
  formatBadBoot,
  parseBadBoot,
} from "./bad_boot.ts";
