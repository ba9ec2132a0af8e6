import { t } from "elysia";
import { bodyInput, type Checked, field, optional, string } from "../http/input.ts";

/** Seconds: a finite number at least 0 (decimals allowed: clips are cut to the frame). */
const seconds = (description: string) =>
  field(
    t.Number({ minimum: 0, description }),
    (v): Checked<number> => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? { ok: true, value: v } : { ok: false, error: "must be a number of seconds, at least 0" }),
  );

/** `POST /videos/{id}/clips/`. Past the types: start < end <= the video's length (video-clips.ts, 422 naming the field). */
export const videoClipInput = bodyInput({
  start_time: seconds("Where the clip starts, in the video's seconds (the first frame at or after it)."),
  end_time: seconds("Where it ends, in the video's seconds: greater than `start_time`, at most the video's length."),
  title: optional(string({ min: 1, max: 200, description: "Defaults to the video's title and the span." })),
});

/** The longest live clip, and the default: the live window (LIVE_CLIP_WINDOW_SECONDS, 30 s by default). */
export function liveClipInput(windowSeconds: number) {
  return bodyInput(
    {
      seconds: optional(
        field(
          t.Number({ exclusiveMinimum: 0, maximum: windowSeconds, description: `The last seconds of the broadcast, at most ${windowSeconds} (the live window); default ${windowSeconds}.` }),
          (v): Checked<number> =>
            typeof v === "number" && Number.isFinite(v) && v > 0 && v <= windowSeconds
              ? { ok: true, value: v }
              : { ok: false, error: `must be a number of seconds, more than 0 and at most ${windowSeconds}` },
        ),
      ),
      title: optional(string({ min: 1, max: 200, description: "Defaults to the stream's title and the time of the cut." })),
    },
    { description: "Optional: the body may be empty (the last 30 s by default)." },
  );
}
