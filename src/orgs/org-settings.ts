/** Organization settings: set by an operator through the CLI, never by an API key. */

export const ALL_PERMISSIONS = [
  "organization.read",
  "videos.create",
  "videos.read",
  "videos.delete",
  "livestreams.create",
  "livestreams.read",
  "livestreams.end",
  "livestreams.delete",
  "webhooks.manage",
  // Issue 27 (src/playback): added after the others; see LATER_PERMISSIONS.
  "signing_keys.manage",
  "playback_restrictions.manage",
  // Issue 28 (src/analytics).
  "analytics.read",
] as const;
export type Permission = (typeof ALL_PERMISSIONS)[number];

export interface Rung {
  name: string;
  height: number;
  videoBitrateKbps: number;
  audioBitrateKbps: number;
}

export const STANDARD_RUNGS: Record<string, Rung> = {
  "144p": { name: "144p", height: 144, videoBitrateKbps: 150, audioBitrateKbps: 64 },
  "240p": { name: "240p", height: 240, videoBitrateKbps: 400, audioBitrateKbps: 64 },
  "360p": { name: "360p", height: 360, videoBitrateKbps: 800, audioBitrateKbps: 96 },
  "480p": { name: "480p", height: 480, videoBitrateKbps: 1400, audioBitrateKbps: 128 },
  "720p": { name: "720p", height: 720, videoBitrateKbps: 2800, audioBitrateKbps: 128 },
  "1080p": { name: "1080p", height: 1080, videoBitrateKbps: 5000, audioBitrateKbps: 160 },
  "1440p": { name: "1440p", height: 1440, videoBitrateKbps: 9000, audioBitrateKbps: 160 },
  "2160p": { name: "2160p", height: 2160, videoBitrateKbps: 16000, audioBitrateKbps: 192 },
};

/** Issue 27: who may play an asset's media: anyone with its URL, or only with a token signed by one of the organization's keys. */
export const PLAYBACK_POLICIES = ["public", "signed"] as const;
export type PlaybackPolicy = (typeof PLAYBACK_POLICIES)[number];

/**
 * Permissions added after organizations already existed: an organization
 * whose stored list holds every permission that existed before them (it was
 * granted "everything") gets them too; one granted less does not.
 */
const LATER_PERMISSIONS: Permission[] = ["signing_keys.manage", "playback_restrictions.manage", "analytics.read"];

export type DownloadFormat = "mkv" | "mp4-encrypted";

export interface Limits {
  /** Every endpoint, per API key. */
  requestsPerMinute: number;
  livestreamsCreatePerMinute: number;
  videosCreatePerMinute: number;
  uploadUrlPerMinute: number;
}

export const DEFAULT_LIMITS: Limits = {
  requestsPerMinute: 120,
  livestreamsCreatePerMinute: 10,
  videosCreatePerMinute: 20,
  uploadUrlPerMinute: 60,
};

export interface OrgSettings {
  /** null: the organization has no transcoding settings (409 TRANSCODE_NOT_CONFIGURED). */
  transcoding: { ladder: Rung[] } | null;
  /** `rungs` names ladder rungs; "top" means the highest rung actually produced. */
  downloads: { rungs: string[]; format: DownloadFormat };
  features: { drm: boolean };
  /** Issue 27: `policy` of a video or stream created without `playback_policy`. */
  playback: { policy: PlaybackPolicy };
  /** Issue 27 item 4: the `static_renditions` of a video registered without them (and of live recordings). */
  staticRenditions: string[];
  permissions: Permission[];
  limits: Limits;
}

export function defaultOrgSettings(): OrgSettings {
  return {
    transcoding: { ladder: ["360p", "720p", "1080p"].map((n) => ({ ...STANDARD_RUNGS[n]! })) },
    downloads: { rungs: ["top"], format: "mkv" },
    features: { drm: false },
    playback: { policy: "public" },
    staticRenditions: [],
    permissions: [...ALL_PERMISSIONS],
    limits: { ...DEFAULT_LIMITS },
  };
}

/** Older rows may lack keys added later; fill them from the defaults. */
export function normalizeSettings(raw: unknown): OrgSettings {
  const d = defaultOrgSettings();
  const s = (raw ?? {}) as Partial<OrgSettings>;
  return {
    transcoding: s.transcoding === undefined ? d.transcoding : s.transcoding,
    downloads: { ...d.downloads, ...s.downloads },
    features: { ...d.features, ...s.features },
    playback: { ...d.playback, ...s.playback },
    staticRenditions: s.staticRenditions ?? d.staticRenditions,
    permissions: s.permissions ? withLaterPermissions(s.permissions) : d.permissions,
    limits: { ...d.limits, ...s.limits },
  };
}

function withLaterPermissions(stored: Permission[]): Permission[] {
  const earlier = ALL_PERMISSIONS.filter((p) => !LATER_PERMISSIONS.includes(p));
  if (!earlier.every((p) => stored.includes(p))) return stored;
  return [...stored, ...LATER_PERMISSIONS.filter((p) => !stored.includes(p))];
}
