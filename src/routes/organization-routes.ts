import { Elysia } from "elysia";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { success } from "../http/envelope.ts";
import { doc } from "../http/openapi-docs.ts";
import { OrganizationSchema } from "./organization-schema.ts";
import { organizationView } from "./organization-view.ts";

/** Lets a client check its key: which organization it acts for and what it may do. */
export function organizationRoutes(deps: {
  /** The speech-to-text engine's name, null without one (issue 12). */ transcripts: () => string | null;
  /** Whether the mediasoup worker is built (issue 14, src/webrtc/availability.ts). */ webrtc?: () => boolean;
  /** Whether SRT ingest listens (issue 26, src/live/srt-ingest.ts). */ srt?: () => boolean;
}) {
  return new Elysia({ name: "organization-routes", prefix: API_PREFIX })
    .use(apiContext())
    .get("/organization/", ({ auth }) => success(organizationView(auth.org, deps.transcripts(), deps.webrtc?.() ?? false, deps.srt?.() ?? false)), {
      permission: "organization.read",
      detail: doc({
        operationId: "getOrganization",
        summary: "The calling organization",
        description: "Returns the organization the API key belongs to, with its features, limits and permissions.",
        tags: ["Organization"],
        data: OrganizationSchema,
        dataDescription:
          "`organization`: id, name, features (`transcoding`, `drm`, `transcripts`: the speech-to-text engine's name or null, `webrtc`: whether the WebRTC media server is built, `srt`: whether SRT ingest listens), transcoding, downloads, limits, permissions.",
      }),
    });
}
