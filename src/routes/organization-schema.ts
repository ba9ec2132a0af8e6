import { type Static, t } from "elysia";
import { type Equals, named, integer, isoTime, nullable, strictObject } from "../http/openapi-docs.ts";
import { ALL_PERMISSIONS, type Permission } from "../orgs/org-settings.ts";
import type { organizationView } from "./organization-view.ts";

/** GET /organization/'s `data`, pinned by `Equals` to `organizationView` (a field added on one side fails tsc). */
const PermissionSchema = t.Unsafe<Permission>({ type: "string", enum: [...ALL_PERMISSIONS] });

const RungSchema = strictObject({ name: t.String({ examples: ["720p"] }), height: integer(), videoBitrateKbps: integer(), audioBitrateKbps: integer() });

export const OrganizationSchema = strictObject({
  organization: strictObject({
    id: t.String(),
    name: t.String(),
    created_at: isoTime(),
    features: strictObject({
      transcoding: t.Boolean(),
      drm: t.Boolean(),
      transcripts: nullable(t.String(), { description: "The speech-to-text engine's name, null without one." }),
      webrtc: t.Boolean({ description: "Whether WebRTC (WHIP ingest, WHEP playback) is available: the mediasoup worker is built (npm run setup:webrtc)." }),
      srt: t.Boolean({ description: "Whether SRT ingest listens (libsrt installed, SRT_PORT not `off`): streams then have an `srt_url`." }),
    }),
    transcoding: nullable(strictObject({ ladder: t.Array(RungSchema) }), { description: "The rendition ladder; null: the organization cannot transcode." }),
    downloads: strictObject({ rungs: t.Array(t.String()), format: t.Union([t.Literal("mkv"), t.Literal("mp4-encrypted")]) }),
    playback: strictObject({
      policy: t.Union([t.Literal("public"), t.Literal("signed")], { description: "The `playback_policy` of a video or stream created without one (`cli org set --playback-policy`)." }),
    }),
    static_renditions: t.Array(t.String(), {
      description: "The `static_renditions` of a video registered without them, and of live recordings (`cli org set --static-renditions`): `highest`, `audio-only`, rung names.",
    }),
    limits: strictObject({
      requests_per_minute: integer(),
      livestreams_create_per_minute: integer(),
      videos_create_per_minute: integer(),
      upload_url_per_minute: integer(),
    }),
    permissions: t.Array(PermissionSchema),
  }),
});

const _org: Equals<Static<typeof OrganizationSchema>, ReturnType<typeof organizationView>> = true;
void _org;

// Named in the document (components.schemas), so clients get this type by name.
named("Organization", OrganizationSchema.properties.organization);
