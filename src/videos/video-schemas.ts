import { t } from "elysia";

export const registerVideoBody = t.Object(
  {
    source_url: t.String({ minLength: 1, maxLength: 2048, description: "http(s) URL the service fetches the source from. Idempotency key per organization.", error: "must be an http or https URL" }),
    title: t.Optional(t.String({ minLength: 1, maxLength: 200, error: "must be a string of 1 to 200 characters" })),
    drm_enabled: t.Optional(t.Boolean({ error: "must be a boolean" })),
    subtitles: t.Optional(t.Boolean({ description: "Ask for a transcript (speech to text).", error: "must be a boolean" })),
    tags: t.Optional(t.Record(t.String(), t.Any(), { description: "Free-form object kept with the video.", error: "must be an object" })),
  },
  { additionalProperties: false },
);

export const uploadUrlBody = t.Optional(
  t.Object(
    {
      filename: t.Optional(t.String({ maxLength: 255, error: "must be a string of at most 255 characters" })),
      size_bytes: t.Optional(t.Integer({ minimum: 1, error: "must be a positive integer" })),
    },
    { additionalProperties: false },
  ),
);

// limit stays a string here: TypeBox's numeric coercion reports errors without the field name.
export const listQuery = t.Object({
  limit: t.Optional(t.String({ pattern: "^[0-9]{1,3}$", error: "must be an integer from 1 to 100", description: "1-100, default 20" })),
  cursor: t.Optional(t.String({ maxLength: 200, error: "must be a cursor from a previous page" })),
});

export const idParams = t.Object({ id: t.String({ maxLength: 64 }) });
