import { t } from "elysia";
import { ApiError } from "../http/api-error.ts";
import { type Checked, type QueryField, queryInput } from "../http/input.ts";
import { parseIsoTimestamp } from "../http/timestamp.ts";

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const bad = (error: string): Checked<never> => ({ ok: false, error });
const fail = (details: Record<string, string>): never => {
  throw ApiError.validation(details);
};

export const GRANULARITIES = ["minute", "hour", "day"] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export const BUCKET_MS: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** The longest range per granularity: series stay at most a few thousand points. */
export const MAX_RANGE_MS: Record<Granularity, number> = { minute: 2 * 86_400_000, hour: 31 * 86_400_000, day: 400 * 86_400_000 };
const DEFAULT_RANGE_MS = 86_400_000;

const time = (what: string): QueryField<number> => ({
  schema: t.String({ format: "date-time", description: what }),
  check(v) {
    const r = parseIsoTimestamp(v);
    return r.ok ? ok(r.ms) : bad(r.error);
  },
});

const query = queryInput({
  from: time("Start of the range (ISO 8601 with a time zone), inclusive; default 24 h before `to`. Views count in the minute they started."),
  to: time("End of the range, exclusive; default now."),
  granularity: {
    schema: t.String({ enum: [...GRANULARITIES], description: "Series step: `minute` (range at most 2 days), `hour` (default; at most 31 days) or `day` (at most 400 days)." }),
    check: (v) => ((GRANULARITIES as readonly string[]).includes(v) ? ok(v as Granularity) : bad(`must be one of: ${GRANULARITIES.join(", ")}`)),
  },
});

export interface AnalyticsRange {
  from: number;
  to: number;
  granularity: Granularity;
}

export const analyticsQuerySchema = query.schema;

/** `?from=&to=&granularity=`: the range aligned to its step (from floored, to ceiled), 422 naming the parameter otherwise. */
export function parseAnalyticsQuery(url: string, now = Date.now()): AnalyticsRange {
  const q = query.parse(url);
  const granularity = q.granularity ?? "hour";
  const step = BUCKET_MS[granularity];
  const to = q.to ?? now;
  const from = q.from ?? to - DEFAULT_RANGE_MS;
  if (from >= to) fail({ from: "must be before to" });
  if (to - from > MAX_RANGE_MS[granularity])
    fail({ granularity: `a ${granularity} series covers at most ${MAX_RANGE_MS[granularity] / 86_400_000} days: narrow from/to or take a coarser granularity` });
  return { from: Math.floor(from / step) * step, to: Math.ceil(to / step) * step, granularity };
}
