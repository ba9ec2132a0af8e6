import type { Organization } from "../orgs/org-store.ts";

/** GET /organization/'s `data` (its schema: organization-schema.ts, which pins itself to this function's type; kept apart from the route so the two do not import each other). */
export function organizationView(org: Organization, transcripts: string | null, webrtc = false, srt = false) {
  return {
    organization: {
      id: org.id,
      name: org.name,
      created_at: new Date(org.createdAt).toISOString(),
      features: { transcoding: org.settings.transcoding !== null, drm: org.settings.features.drm, transcripts, webrtc, srt },
      transcoding: org.settings.transcoding,
      downloads: org.settings.downloads,
      playback: { policy: org.settings.playback.policy },
      static_renditions: org.settings.staticRenditions,
      limits: {
        requests_per_minute: org.settings.limits.requestsPerMinute,
        livestreams_create_per_minute: org.settings.limits.livestreamsCreatePerMinute,
        videos_create_per_minute: org.settings.limits.videosCreatePerMinute,
        upload_url_per_minute: org.settings.limits.uploadUrlPerMinute,
      },
      permissions: org.settings.permissions,
    },
  };
}
