import { t } from "elysia";
import { MAX_STATIC_RENDITIONS } from "../orgs/static-rendition-names.ts";
import { playbackFields } from "../playback/playback-input.ts";
import { bodyInput, boolean, enumListParam, enumParam, field, integer, optional, pageParams, queryInput, string, tagsField, type Checked } from "../http/input.ts";

const SOURCE_URL_ERROR = "must be an http or https URL";
const NAMES_ERROR = `must be an array of at most ${MAX_STATIC_RENDITIONS} names (strings of 1 to 32 characters)`;

/** `static_renditions`' shape; which names are known is the registration's check (it needs the organization's ladder). */
function checkNames(v: unknown): Checked<string[]> {
  if (!Array.isArray(v) || v.length > MAX_STATIC_RENDITIONS) return { ok: false, error: NAMES_ERROR };
  if (!v.every((n) => typeof n === "string" && n.length >= 1 && n.length <= 32)) return { ok: false, error: NAMES_ERROR };
  return { ok: true, value: v as string[] };
}

/** An absolute http(s) URL of at most 2048 characters whose path decodes (malformed percent-encoding is refused). */
function checkSourceUrl(v: unknown): Checked<string> {
  if (typeof v !== "string" || v.length < 1 || v.length > 2048) return { ok: false, error: SOURCE_URL_ERROR };
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return { ok: false, error: SOURCE_URL_ERROR };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, error: SOURCE_URL_ERROR };
  try {
    decodeURIComponent(url.pathname);
  } catch {
    return { ok: false, error: "must not contain malformed percent-encoding (such as %E0%A4%A) in its path" };
  }
  return { ok: true, value: v };
}

export const registerVideoInput = bodyInput({
  source_url: field(
    t.String({
      minLength: 1,
      maxLength: 2048,
      format: "uri",
      description:
        "http(s) URL the service fetches the source from, or a finished upload of this organization: the `source_url` of POST /videos/upload-url/ (`X-Source-Url` of a tus upload) or the tus upload's own URL. Idempotency key per organization.",
    }),
    checkSourceUrl,
  ),
  title: optional(string({ min: 1, max: 200, description: "Defaults to the last path segment of `source_url`." })),
  drm_enabled: optional(boolean("Package the renditions with DRM (needs the organization's DRM feature). Default false.")),
  subtitles: optional(boolean("Ask for a transcript (speech to text). Default false.")),
  tags: optional(tagsField()),
  ...playbackFields,
  static_renditions: optional(
    field(
      t.Array(t.String({ minLength: 1, maxLength: 32 }), {
        maxItems: MAX_STATIC_RENDITIONS,
        examples: [["highest", "audio-only"]],
        description:
          "Progressive files to make beside the HLS ladder, by stream copy: `highest` (an MP4 of the top rung produced), `audio-only` (an M4A), or a rung name of the organization's ladder (`720p`: an MP4). Listed on the video as `static_renditions` with their status. Default: the organization's (`cli org set --static-renditions`); `[]` for none. Not with `drm_enabled` (a DRM video gets no clear copy).",
      }),
      checkNames,
    ),
  ),
});

export const uploadUrlInput = bodyInput(
  {
    filename: optional(string({ max: 255, description: "For your reference." })),
    size_bytes: optional(integer({ min: 1, description: "Expected size; refused at once when over the upload limit.", error: "must be a positive integer" })),
  },
  { description: "Optional: the body may be empty." },
);

export const VIDEO_STATUSES = ["TRANSCODING", "COMPLETED", "ERROR"] as const;
export const VIDEO_KINDS = ["UPLOAD", "LIVESTREAM_RECORDING"] as const;

export const videoListQuery = queryInput({
  ...pageParams,
  status: enumListParam(VIDEO_STATUSES, "videos"),
  kind: enumParam(VIDEO_KINDS, "Only videos of this kind: UPLOAD or LIVESTREAM_RECORDING."),
});

export const idParams = t.Object({ id: t.String({ maxLength: 64 }) });
