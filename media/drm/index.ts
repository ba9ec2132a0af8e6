export { packageDash, buildPackagerArgs, MANIFEST, type DashInput, type PackageDashOptions, type PackagedDash } from "./package-dash.ts";
export { packagerBinary, findPackager, hasPackager } from "./packager-binary.ts";
export { checkDrmKey, keyIdAsUuid, type DrmKey } from "./drm-key.ts";
export {
  renditionMpd,
  mpdRepresentations,
  mpdDurationSeconds,
  mpdProtection,
  clearKeyMpd,
  CLEARKEY_SYSTEM_SCHEME,
  type MpdRepresentation,
  type MpdProtection,
} from "./mpd.ts";
export { PackagerUnavailableError, PackagingFailedError, InvalidDrmKeyError } from "./errors.ts";

/** schemeIdUri of the W3C common PSSH system: its PSSH box is in the init segments (the MPD names the ClearKey system instead, mpd.ts). */
export const COMMON_SYSTEM_SCHEME = "urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b";
