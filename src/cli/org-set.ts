import { CliUsageError } from "./command.ts";
import { ALL_PERMISSIONS, PLAYBACK_POLICIES, STANDARD_RUNGS, type DownloadFormat, type Limits, type OrgSettings, type Permission, type PlaybackPolicy } from "../orgs/org-settings.ts";

// Its errors are the command line's (exit 2, naming the flag): see command.ts.
export { CliUsageError };

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
  throw new CliUsageError(`--${name} takes on or off, got "${v}"`);
}

function rung(name: string) {
  const r = STANDARD_RUNGS[name];
  if (!r) throw new CliUsageError(`--ladder: unknown rung "${name}" (known: ${Object.keys(STANDARD_RUNGS).join(", ")})`);
  return { ...r };
}

/** Applies `org set` options to settings; throws CliUsageError naming the bad option. */
export function applyOrgSet(settings: OrgSettings, options: Record<string, string[]>): OrgSettings {
  const next: OrgSettings = structuredClone(settings);
  const last = (k: string) => options[k]?.at(-1);
  const ladderArg = last("ladder");
  const transcoding = last("transcoding");
  if (transcoding !== undefined) {
    next.transcoding = onOff("transcoding", transcoding) ? (next.transcoding ?? { ladder: ["360p", "720p", "1080p"].map(rung) }) : null;
  }
  if (ladderArg !== undefined) {
    const ladder = ladderArg
      .split(",")
      .map((s) => rung(s.trim()))
      .sort((a, b) => a.height - b.height);
    if (ladder.length === 0) throw new CliUsageError("--ladder needs at least one rung");
    next.transcoding = { ladder };
  }
  const downloads = last("downloads");
  if (downloads !== undefined) next.downloads.rungs = downloads === "none" ? [] : downloads.split(",").map((s) => s.trim());
  const format = last("download-format");
  if (format !== undefined) {
    if (format !== "mkv" && format !== "mp4-encrypted") throw new CliUsageError(`--download-format takes mkv or mp4-encrypted, got "${format}"`);
    next.downloads.format = format as DownloadFormat;
  }
  const drm = last("drm");
  // The DRM feature (issue 11): videos and live recordings registered with drm_enabled are packaged as
  // encrypted DASH with a ClearKey licence; without it drm_enabled answers 409 DRM_NOT_AVAILABLE. Switching it
  // off refuses new DRM registrations only: videos already protected keep their keys and licences.
  if (drm !== undefined) next.features.drm = onOff("drm", drm);
  const policy = last("playback-policy");
  // Issue 27 (src/playback): the default of POST /videos/ and POST /livestreams/; assets already created keep theirs.
  if (policy !== undefined) {
    if (!(PLAYBACK_POLICIES as readonly string[]).includes(policy)) throw new CliUsageError(`--playback-policy takes public or signed, got "${policy}"`);
    next.playback.policy = policy as PlaybackPolicy;
  }
  const perms = last("permissions");
  if (perms !== undefined) {
    const list = perms === "all" ? [...ALL_PERMISSIONS] : perms === "none" ? [] : perms.split(",").map((s) => s.trim());
    for (const p of list) if (!(ALL_PERMISSIONS as readonly string[]).includes(p)) throw new CliUsageError(`--permissions: unknown permission "${p}" (known: ${ALL_PERMISSIONS.join(", ")})`);
    next.permissions = list as Permission[];
  }
  for (const spec of options.limit ?? []) {
    const [name, value] = spec.split("=");
    const key = LIMIT_NAMES[name ?? ""];
    const n = Number(value);
    if (!key) throw new CliUsageError(`--limit: unknown limit "${name}" (known: ${Object.keys(LIMIT_NAMES).join(", ")})`);
    if (!Number.isInteger(n) || n < 1) throw new CliUsageError(`--limit ${name} must be a positive integer, got "${value}"`);
    next.limits[key] = n;
  }
  return next;
}
