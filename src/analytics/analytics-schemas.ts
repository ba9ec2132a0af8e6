import { t } from "elysia";
import { integer, isoTime, named, nullable, strictObject } from "../http/openapi-docs.ts";
import { EVENT_TYPES } from "./event-types.ts";

const Breakdown = named(
  "AnalyticsBreakdown",
  strictObject({
    value: t.String({ description: "Country (ISO 3166 alpha-2, `unknown`), browser, OS, device type (`desktop`, `mobile`, `tablet`, …) or rendition (`720p`: the view's average height)." }),
    views: integer(),
    watch_time_seconds: t.Number(),
  }),
);
const By = strictObject(
  { country: t.Array(Breakdown), browser: t.Array(Breakdown), os: t.Array(Breakdown), device_type: t.Array(Breakdown), rendition: t.Array(Breakdown) },
  { description: "Top 10 per dimension by views, over the closed views that started in the range." },
);
const SeriesPoint = named(
  "AnalyticsSeriesPoint",
  strictObject({
    at: isoTime("Start of the bucket."),
    views: integer(),
    watch_time_seconds: t.Number(),
    startup_time_ms_avg: nullable(integer()),
    rebuffer_ratio: t.Number(),
    errors: integer({ description: "Views with at least one error." }),
  }),
);

const common = {
  from: isoTime("The range's start, floored to the granularity."),
  to: isoTime("The range's end (exclusive), ceiled to the granularity."),
  granularity: t.Union([t.Literal("minute"), t.Literal("hour"), t.Literal("day")]),
  views: integer({ description: "Closed views that started in the range." }),
  unique_viewers: integer({ description: "Distinct `viewer_id`s among them." }),
  watch_time_seconds: t.Number(),
  rebuffer_ratio: t.Number({ description: "Stalled ÷ (watched + stalled), over all views." }),
  error_rate: t.Number({ description: "Views with an error ÷ views." }),
};

const assetFields = {
  ...common,
  startup_time_ms: strictObject(
    { p50: nullable(integer()), p95: nullable(integer()) },
    { description: "Exact nearest-rank percentiles of the views' startup times (viewstart to first frame); null without a started view." },
  ),
  exits_before_start: integer({ description: "Views that ended before their first frame." }),
  stall_count: integer({ description: "Stalls (a `waiting` after the first frame, not a seek's) over all views." }),
  stalled_seconds: t.Number({ description: "Time spent stalled over all views." }),
  series: t.Array(SeriesPoint),
  by: By,
};

export const VideoAnalyticsSchema = named("VideoAnalytics", strictObject(assetFields));

const Concurrent = named(
  "ConcurrentViewers",
  strictObject({
    current: integer({ description: "HLS viewers with a beacon in the last 30 s plus WHEP viewers now." }),
    peak: integer(),
    peak_at: nullable(isoTime()),
    series: t.Array(strictObject({ at: isoTime(), viewers: integer() })),
  }),
);
export const LivestreamAnalyticsSchema = named("LivestreamAnalytics", strictObject({ ...assetFields, concurrent_viewers: Concurrent }));

const TopAsset = strictObject({ id: t.String(), views: integer(), watch_time_seconds: t.Number() });
export const AnalyticsOverviewSchema = named(
  "AnalyticsOverview",
  strictObject({
    ...common,
    series: t.Array(strictObject({ at: isoTime(), views: integer(), watch_time_seconds: t.Number(), rebuffer_ratio: t.Number() })),
    top_videos: t.Array(TopAsset),
    top_livestreams: t.Array(TopAsset),
    by: By,
  }),
);

/** The beacon body, documented (src/analytics/beacon-input.ts is the judge). */
export const BeaconEventSchema = named(
  "BeaconEvent",
  t.Object(
    {
      view_id: t.String({ description: "The player's random id of this view (1-64 of A-Z a-z 0-9 - _)." }),
      viewer_id: t.String({ description: "The player's random id of this browser (not a person)." }),
      video_id: t.Optional(t.String({ description: "Exactly one of video_id and stream_id." })),
      stream_id: t.Optional(t.String()),
      type: t.Union(
        EVENT_TYPES.map((e) => t.Literal(e)),
        { description: "`waiting` begins a stall (after the first frame); `rendition_change` needs height and bitrate; `error` needs code." },
      ),
      t: integer({ description: "The player's clock, epoch milliseconds." }),
      player_time: t.Number({ description: "Media position in seconds." }),
      height: t.Optional(integer()),
      bitrate: t.Optional(integer({ description: "Bits per second." })),
      code: t.Optional(t.Union([t.String(), integer()])),
      startup_ms: t.Optional(integer({ description: "On the first playing: viewstart to first frame." })),
      token: t.Optional(t.String({ description: "A signed asset's playback token (JWT, aud v): events of a signed asset without a valid one are dropped." })),
    },
    { additionalProperties: false },
  ),
);
export const BeaconBodySchema = t.Array(BeaconEventSchema, { minItems: 1, maxItems: 500 });
