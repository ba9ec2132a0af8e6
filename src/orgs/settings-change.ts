import { InvalidInput } from "../errors.ts";
import type { Organization, OrgStore } from "./org-store.ts";
import { staticRenditionsRefusal, uniqueNames } from "./static-rendition-names.ts";
import { ALL_PERMISSIONS, PLAYBACK_POLICIES, STANDARD_RUNGS, type DownloadFormat, type Limits, type OrgSettings, type Permission, type PlaybackPolicy } from "./org-settings.ts";

/**
 * Changing an organization's settings (issue 25: moved here from the CLI):
 * the one place that validates and applies a change, whoever asks. The
 * operator's `cli org set` and the settings screen's Organization form both
 * build a `SettingsChange` and call `changeOrgSettings`, so the screen refuses
 * what the CLI refuses, with the same message (which names the `org set`
 * option, the operator's word for each field).
 */
export interface SettingsChange {
  /** `on` | `off` (`true` | `false`): off makes the organization source-only. */
  transcoding?: string;
  /** Comma-separated standard rungs (`360p,720p`), sorted by height. */
  ladder?: string;
  /** `none`, or comma-separated rungs (`top`, `720p`). */
  downloads?: string;
  downloadFormat?: string;
  drm?: string;
  playbackPolicy?: string;
  /** `none`, or comma-separated names: `highest`, `audio-only`, rungs of the ladder (issue 27 item 4). */
  staticRenditions?: string;
  /** `all`, `none`, or comma-separated permissions. */
  permissions?: string;
  /** `NAME=N` per-minute limits (requests, livestreams, videos, upload-url). */
  limits?: string[];
}

/** A change refused; the message names the option (nothing was saved). */
export class SettingsChangeRefused extends InvalidInput {
  constructor(message: string) {
    super({ settings: message }, message);
  }
}

const LIMIT_NAMES: Record<string, keyof Limits> = {
  requests: "requestsPerMinute",
  "requests-per-minute": "requestsPerMinute",
  livestreams: "livestreamsCreatePerMinute",
  videos: "videosCreatePerMinute",
  "upload-url": "uploadUrlPerMinute",
};

function onOff(name: string, v: string): boolean {
  if (v === "on" || v === "true") return true;
  if (v === "off" || v === "false") return false;
  throw new SettingsChangeRefused(`--${name} takes on or off, got "${v}"`);
}

function rung(name: string) {
  const r = STANDARD_RUNGS[name];
  if (!r) throw new SettingsChangeRefused(`--ladder: unknown rung "${name}" (known: ${Object.keys(STANDARD_RUNGS).join(", ")})`);
  return { ...r };
}

function staticRenditionsOf(v: string): string[] {
  return v === "none" || v === "" ? [] : uniqueNames(v.split(",").map((s) => s.trim()));
}

/** The settings after `change`; throws SettingsChangeRefused naming the bad option. */
export function applySettingsChange(settings: OrgSettings, change: SettingsChange): OrgSettings {
  const next: OrgSettings = structuredClone(settings);
  if (change.transcoding !== undefined) {
    next.transcoding = onOff("transcoding", change.transcoding) ? (next.transcoding ?? { ladder: ["360p", "720p", "1080p"].map(rung) }) : null;
  }
  if (change.ladder !== undefined) {
    const ladder = change.ladder
      .split(",")
      .map((s) => rung(s.trim()))
      .sort((a, b) => a.height - b.height);
    if (ladder.length === 0) throw new SettingsChangeRefused("--ladder needs at least one rung");
    next.transcoding = { ladder };
  }
  if (change.downloads !== undefined) next.downloads.rungs = change.downloads === "none" ? [] : change.downloads.split(",").map((s) => s.trim());
  const format = change.downloadFormat;
  if (format !== undefined) {
    if (format !== "mkv" && format !== "mp4-encrypted") throw new SettingsChangeRefused(`--download-format takes mkv or mp4-encrypted, got "${format}"`);
    next.downloads.format = format as DownloadFormat;
  }
  // The DRM feature (issue 11): videos and live recordings registered with drm_enabled are packaged as
  // encrypted DASH with a ClearKey licence; without it drm_enabled answers 409 DRM_NOT_AVAILABLE. Switching it
  // off refuses new DRM registrations only: videos already protected keep their keys and licences.
  if (change.drm !== undefined) next.features.drm = onOff("drm", change.drm);
  const policy = change.playbackPolicy;
  // Issue 27 (src/playback): the default of POST /videos/ and POST /livestreams/; assets already created keep theirs.
  if (policy !== undefined) {
    if (!(PLAYBACK_POLICIES as readonly string[]).includes(policy)) throw new SettingsChangeRefused(`--playback-policy takes public or signed, got "${policy}"`);
    next.playback.policy = policy as PlaybackPolicy;
  }
  if (change.staticRenditions !== undefined) next.staticRenditions = staticRenditionsOf(change.staticRenditions);
  // Checked against the ladder after the change: a new ladder that drops a named rung is refused with it.
  const refusal = staticRenditionsRefusal(
    next.staticRenditions,
    (next.transcoding?.ladder ?? []).map((r) => r.name),
  );
  if (refusal && (change.staticRenditions !== undefined || change.ladder !== undefined)) throw new SettingsChangeRefused(`--static-renditions: ${refusal}`);
  const perms = change.permissions;
  if (perms !== undefined) {
    const list = perms === "all" ? [...ALL_PERMISSIONS] : perms === "none" ? [] : perms.split(",").map((s) => s.trim());
    for (const p of list) if (!(ALL_PERMISSIONS as readonly string[]).includes(p)) throw new SettingsChangeRefused(`--permissions: unknown permission "${p}" (known: ${ALL_PERMISSIONS.join(", ")})`);
    next.permissions = list as Permission[];
  }
  for (const spec of change.limits ?? []) {
    const [name, value] = spec.split("=");
    const key = LIMIT_NAMES[name ?? ""];
    const n = Number(value);
    if (!key) throw new SettingsChangeRefused(`--limit: unknown limit "${name}" (known: ${Object.keys(LIMIT_NAMES).join(", ")})`);
    if (!Number.isInteger(n) || n < 1) throw new SettingsChangeRefused(`--limit ${name} must be a positive integer, got "${value}"`);
    next.limits[key] = n;
  }
  return next;
}

/**
 * Saves a change, applied to the row read inside the write (so a change made
 * meanwhile by someone else is kept). `change` may depend on the settings
 * found there (the screen's form: the ladder only while transcoding is on).
 */
export function changeOrgSettings(orgs: Pick<OrgStore, "updateSettings">, orgId: string, change: SettingsChange | ((current: OrgSettings) => SettingsChange)): Promise<Organization> {
  return orgs.updateSettings(orgId, (current) => applySettingsChange(current, typeof change === "function" ? change(current) : change));
}
