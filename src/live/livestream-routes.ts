import { Elysia, t } from "elysia";
import { streamResource, type StreamContext, type StreamWebrtc } from "../../machines/livestream-payload.ts";
import { streamStatus } from "../../machines/livestream-machine.ts";
import type { ActorRecord } from "../actors/actor-runtime.ts";
import { API_PREFIX, apiContext } from "../http/api-context.ts";
import { ApiError } from "../http/api-error.ts";
import { pageOf } from "../http/cursor.ts";
import { success } from "../http/envelope.ts";
import { createPageCache, createViewCache, notFoundResponse, okJson, pageJson } from "../http/view-cache.ts";
import { bodyInput, boolean, enumListParam, field, oneOf, optional, pageParams, queryInput, string, tagsField } from "../http/input.ts";
import { DeletedSchema, doc } from "../http/openapi-docs.ts";
import { parseScheduledAt } from "../http/timestamp.ts";
import { idParams } from "../videos/video-schemas.ts";
import type { LiveIngest } from "./live-ingest.ts";
import type { LivestreamService } from "./livestream-service.ts";
import { playbackFields } from "../playback/playback-input.ts";
import { StreamAnswerSchema, StreamListSchema } from "./livestream-resource-schema.ts";
import { outputsField } from "./outputs/output-input.ts";
import { type OutputRow, outputView } from "./outputs/output-store.ts";
import type { LiveOutputs } from "./outputs/output-module.ts";

const tags = ["Live streams"];

const streamFields = {
  title: string({ min: 1, max: 200 }),
  latency: optional(oneOf(["NORMAL", "LOW"] as const, "NORMAL (default): 2 s segments; LOW: 1 s segments.")),
  drm_enabled: optional(boolean("Package the recording with DRM (needs the organization's DRM feature). Default false.")),
  subtitles: optional(boolean("Transcribe the recording (speech to text) like an upload's `subtitles`. Default false; 422 when the server has no engine.")),
  tags: optional(tagsField()),
  ...playbackFields,
  outputs: outputsField,
};
export const createStreamInput = bodyInput(streamFields);
export const scheduleStreamInput = bodyInput({
  ...streamFields,
  scheduled_at: field(
    t.String({
      format: "date-time",
      description: "When the broadcast starts: ISO 8601 with a time zone (Z or ±HH:MM), a real calendar date, in the future and at most one year ahead.",
      examples: ["2030-01-31T18:00:00Z"],
    }),
    (v) => {
      const r = parseScheduledAt(v);
      return r.ok ? { ok: true as const, value: v as string } : r;
    },
  ),
});
const STREAM_STATUSES = ["SCHEDULED", "READY_TO_STREAM", "LIVE", "ENDED", "ERROR"] as const;
const streamListQuery = queryInput({ ...pageParams, status: enumListParam(STREAM_STATUSES, "streams") });

export function view(record: ActorRecord<StreamContext>) {
  return viewWith(record);
}

/** `webrtc`: the stream's WebRTC fields on this process (src/webrtc); without it no WHIP/WHEP URLs and 0 viewers. */
function viewWith(record: ActorRecord<StreamContext>, webrtc?: StreamWebrtc, srtUrl?: (streamKey: string) => string | null, outputs: OutputRow[] = []) {
  const status = streamStatus(record.value);
  const settled = record.tags.has("settled");
  return streamResource(
    record.context,
    status === "DELETED" ? "ENDED" : status,
    webrtc,
    srtUrl?.(record.context.streamKey) ?? null,
    outputs.map((o) => outputView(o, settled)),
  );
}

/**
 * What else a stream's JSON depends on than its record (the view caches' tag): WebRTC and the simulcast outputs.
 * A stream with no WHEP viewer, no re-encode and no output (nearly every item of a page) gets a constant: no
 * string is built per item and request (bench:api, the stream list).
 */
function webrtcTag(w: StreamWebrtc | undefined, outputs: OutputRow[] = []): string {
  if (outputs.length === 0 && (!w || (w.viewers === 0 && !w.transcode))) return w ? (w.available ? "1:0:" : "0:0:") : "";
  return (w ? `${w.available ? 1 : 0}:${w.viewers}:${w.transcode?.message ?? ""}` : "") + outputs.map((o) => `|${o.id}:${o.status}:${o.bytesSent}:${o.startedAt}:${o.lastError ?? ""}`).join("");
}

/** Outputs by stream id, from one read. */
function byStream(rows: OutputRow[]): Map<string, OutputRow[]> {
  const m = new Map<string, OutputRow[]>();
  for (const r of rows) m.set(r.streamId, [...(m.get(r.streamId) ?? []), r]);
  return m;
}

export function livestreamRoutes(deps: {
  livestreams: LivestreamService;
  ingest: LiveIngest;
  /** Resolves once the stream's broadcast is finalized (its recording registered). */
  finalized: (id: string) => Promise<void>;
  removeFiles: (id: string) => Promise<void>;
  /** A stream's WebRTC fields here (src/webrtc): `whip_url`/`whep_url` (null without WebRTC), `webrtc_viewers`, `webrtc_transcode`. */
  webrtc?: (streamId: string) => StreamWebrtc;
  /** A stream's `srt_url` (null without SRT ingest). */
  srtUrl?: (streamKey: string) => string | null;
  /** Issue 26: the streams' simulcast targets (src/live/outputs). */
  outputs?: Pick<LiveOutputs, "store" | "prepare">;
}) {
  const { livestreams, ingest } = deps;
  const view = (record: ActorRecord<StreamContext>, webrtc = deps.webrtc?.(record.id), outputs: OutputRow[] = []) => viewWith(record, webrtc, deps.srtUrl, outputs);
  const outputsOf = async (ids: string[]) => byStream((await deps.outputs?.store.ofStreams(ids)) ?? []);
  /** Creation with its `outputs` (checked first, stored in the stream's own transaction). */
  const createWith = async (org: Parameters<LivestreamService["create"]>[0], input: ReturnType<typeof createStreamInput.parse>) => {
    const targets = input.outputs?.length && deps.outputs ? await deps.outputs.prepare(input.outputs) : [];
    const record = await livestreams.create(org, input, targets.length > 0 ? { within: (tx, id) => deps.outputs!.store.addIn(tx, id, org.id, targets) } : {});
    return view(record, undefined, (await outputsOf([record.id])).get(record.id));
  };
  const views = createViewCache<ActorRecord<StreamContext>>();
  const pages = createPageCache();
  /** An item answer's `data` (`{"stream":…}`) per record object and viewer count. */
  const items = createPageCache();
  const load = async (orgId: string, id: string) => {
    const record = await livestreams.get(orgId, id);
    if (!record) throw ApiError.notFound();
    return record;
  };
  return new Elysia({ name: "livestream-routes", prefix: API_PREFIX })
    .use(apiContext())
    .post(
      "/livestreams/",
      async ({ auth, body, set }) => {
        const stream = await createWith(auth.org, createStreamInput.parse(body));
        set.status = 201;
        return success({ stream }, "Live stream created; push to rtmp_url.");
      },
      {
        permission: "livestreams.create",
        detail: doc({
          operationId: "createLivestream",
          body: createStreamInput.schema,
          tags,
          summary: "Create a live stream, ready now",
          description:
            "Takes a slot and answers the full stream shape with `rtmp_url` (status READY_TO_STREAM); LIVESTREAM_SCHEDULED fires. 503 NO_SLOTS_AVAILABLE when the pool is exhausted, 409 DRM_NOT_AVAILABLE, 429 over 10/min per organization.",
          ok: 201,
          data: StreamAnswerSchema,
          dataDescription: "`stream`: the full shape with `rtmp_url`.",
          errors: ["VALIDATION_ERROR", "DRM_NOT_AVAILABLE", "NO_SLOTS_AVAILABLE"],
        }),
      },
    )
    .post(
      "/livestreams/schedule/",
      async ({ auth, body, set }) => {
        const stream = await createWith(auth.org, scheduleStreamInput.parse(body));
        set.status = 201;
        return success({ stream }, "Live stream booked.");
      },
      {
        permission: "livestreams.create",
        detail: doc({
          operationId: "scheduleLivestream",
          body: scheduleStreamInput.schema,
          tags,
          summary: "Book a live stream for later",
          description:
            "SCHEDULED until shortly before `scheduled_at`, then READY_TO_STREAM (a slot is taken then). LIVESTREAM_SCHEDULED fires now. Counts in the same 10/min per-organization limit as POST /livestreams/.",
          ok: 201,
          data: StreamAnswerSchema,
          dataDescription: "`stream`: the full shape, status SCHEDULED.",
          errors: ["VALIDATION_ERROR", "DRM_NOT_AVAILABLE"],
        }),
      },
    )
    .get(
      "/livestreams/",
      async ({ auth, request }) => {
        const query = streamListQuery.parse(request.url);
        // The filter rides on the page object down to ActorRuntime.list (an `and` on actors.status).
        const filter = { status: query.status };
        const { page, next_cursor, rows } = await pageOf(query, (p) => livestreams.list(auth.org.id, Object.assign(p, filter)));
        // Items serialized once per record version and viewer count, pages once per read and viewer counts (src/http/view-cache.ts).
        const rtc = page.map((r) => deps.webrtc?.(r.id));
        const outs = await outputsOf(page.map((r) => r.id));
        const tags = rtc.map((w, i) => webrtcTag(w, outs.get(page[i]!.id)));
        return okJson(
          pages(rows, `${next_cursor}:${tags.join(",")}`, () =>
            pageJson(
              page.map((r, i) => views(r, tags[i], () => view(r, rtc[i], outs.get(r.id)))),
              next_cursor,
            ),
          ),
        );
      },
      {
        permission: "livestreams.read",
        query: streamListQuery.schema,
        detail: doc({
          operationId: "listLivestreams",
          tags,
          summary: "List live streams",
          description:
            "Newest first; `limit` (1-100, default 20) and `cursor`. Filter: `status` (SCHEDULED, READY_TO_STREAM, LIVE, ENDED or ERROR; several separated by commas). Any other query parameter, a repeated one or a bad value is 422 naming it.",
          data: StreamListSchema,
          dataDescription: "`items` and `next_cursor`.",
          errors: ["VALIDATION_ERROR"],
        }),
      },
    )
    .get(
      "/livestreams/:id/",
      async ({ auth, params }) => {
        const record = await livestreams.get(auth.org.id, params.id);
        if (!record) return notFoundResponse();
        // Serialized once per record version and viewer count (src/http/view-cache.ts), shared with the list.
        const rtc = deps.webrtc?.(record.id);
        const outs = (await outputsOf([record.id])).get(record.id);
        const tag = webrtcTag(rtc, outs);
        return okJson(items(record, tag, () => `{"stream":${views(record, tag, () => view(record, rtc, outs))}}`));
      },
      {
        permission: "livestreams.read",
        params: idParams,
        detail: doc({
          operationId: "getLivestream",
          tags,
          summary: "Get a live stream",
          description: "The full shape (2.7) plus `recording`, `latency`, `drm`, `duration_seconds` and `playback_url` once the recording is playable.",
          data: StreamAnswerSchema,
          dataDescription: "`stream`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    )
    .post(
      "/livestreams/:id/end/",
      async ({ auth, params }) => {
        const record = await load(auth.org.id, params.id);
        if (!record.tags.has("settled")) await ingest.endExplicitly(record.context);
        const ended = await load(auth.org.id, params.id);
        return success({ stream: view(ended, undefined, (await outputsOf([ended.id])).get(ended.id)) }, "Live stream ended.");
      },
      {
        permission: "livestreams.end",
        params: idParams,
        detail: doc({
          operationId: "endLivestream",
          tags,
          summary: "End a live stream",
          description: "Disconnects the publisher; LIVESTREAM_ENDED fires with the full shape, then LIVESTREAM_RECORDING_READY when a recording exists. Ending an ended stream is a no-op.",
          data: StreamAnswerSchema,
          dataDescription: "`stream`, status ENDED.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    )
    .delete(
      "/livestreams/:id/",
      async ({ auth, params }) => {
        const record = await load(auth.org.id, params.id);
        // On air: exactly what /end/ does (LIVESTREAM_ENDED, full shape), and the deletion waits until the
        // recording is in the library and announced (LIVESTREAM_RECORDING_READY); a deleted stream takes no events.
        // On air: ended first (ENDED fires, the recording enters the library), then deleted.
        if (record.tags.has("holdsSlot")) {
          await ingest.endExplicitly(record.context);
          await deps.finalized(record.id);
        }
        await livestreams.remove(record.id, { within: async (tx) => deps.outputs?.store.removeAllIn(tx, record.id) });
        await deps.removeFiles(record.id);
        return success({ id: record.id, deleted: true }, "Live stream deleted.");
      },
      {
        permission: "livestreams.delete",
        params: idParams,
        detail: doc({
          operationId: "deleteLivestream",
          tags,
          summary: "Delete a live stream",
          description: "Ends it first if on air. Its recording stays in the library as a video.",
          data: DeletedSchema,
          dataDescription: "`id`, `deleted: true`.",
          errors: ["NOT_FOUND", "VALIDATION_ERROR"],
        }),
      },
    );
}
