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
  permissions: Permission[];
  limits: Limits;
}

export function defaultOrgSettings(): OrgSettings {
  return {
    transcoding: { ladder: ["360p", "720p", "1080p"].map((n) => ({ ...STANDARD_RUNGS[n]! })) },
    downloads: { rungs: ["top"], format: "mkv" },
    features: { drm: false },
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
    permissions: s.permissions ?? d.permissions,
    limits: { ...d.limits, ...s.limits },
  };
}
