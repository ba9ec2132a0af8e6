import type { AnimatedFormat, FitMode, StillFormat } from "../../media/images/image-args.ts";

/** Issue 27: limits of images by URL (Mux's, where it states them). */
export const IMAGE_LIMITS = { maxSide: 1920, maxAnimatedWidth: 640, maxAnimatedSeconds: 10, maxFps: 30 } as const;
/** Defaults of an animated image: Mux's (the first 5 s, 320 px wide, 15 fps). */
export const ANIMATED_DEFAULTS = { seconds: 5, width: 320, fps: 15 } as const;

export type ImageRequest =
  | { kind: "thumbnail"; format: StillFormat; time: number | null; width: number | null; height: number | null; fitMode: FitMode }
  | { kind: "animated"; format: AnimatedFormat; start: number; end: number | null; width: number; fps: number };

const FILES = /^(thumbnail)\.(jpg|png|webp)$|^(animated)\.(gif|webp)$/;
const FIT_MODES: FitMode[] = ["preserve", "crop", "pad"];
/** A query's own parameters besides the image's: the playback token. */
const PASSTHROUGH = new Set(["token"]);

/** `thumbnail.jpg` → its kind and format; null for any other name (404). */
export function imageFile(name: string): { kind: "thumbnail"; format: StillFormat } | { kind: "animated"; format: AnimatedFormat } | null {
  const m = FILES.exec(name);
  if (!m) return null;
  return m[1] ? { kind: "thumbnail", format: m[2] as StillFormat } : { kind: "animated", format: m[4] as AnimatedFormat };
}

/** A decimal number of seconds (`12`, `3.5`), at most millisecond precision kept. */
function seconds(raw: string, field: string, details: Record<string, string>): number | null {
  if (!/^\d{1,6}(\.\d{1,6})?$/.test(raw)) {
    details[field] = "must be a number of seconds, 0 or more (e.g. 12.5)";
    return null;
  }
  return Math.round(Number(raw) * 1000) / 1000;
}

function integer(raw: string, field: string, min: number, max: number, details: Record<string, string>): number | null {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    details[field] = `must be a whole number from ${min} to ${max}`;
    return null;
  }
  return Number(raw);
}

/**
 * The query of an image URL, checked whole: every bad or unknown parameter
 * is named in `details` (422), not only the first. `duration` (seconds,
 * null for a live stream) bounds `time`, `start` and `end`.
 */
export function parseImageQuery(
  file: { kind: "thumbnail"; format: StillFormat } | { kind: "animated"; format: AnimatedFormat },
  query: URLSearchParams,
  duration: number | null,
): { ok: true; request: ImageRequest } | { ok: false; details: Record<string, string> } {
  const details: Record<string, string> = {};
  const known = file.kind === "thumbnail" ? ["time", "width", "height", "fit_mode"] : ["start", "end", "width", "fps"];
  const seen = new Set<string>();
  for (const name of query.keys()) {
    if (PASSTHROUGH.has(name)) continue;
    if (!known.includes(name)) details[name] = `is not a parameter of ${file.kind} images (${known.join(", ")})`;
    else if (seen.has(name)) details[name] = "is given more than once";
    seen.add(name);
  }
  const get = (name: string) => (query.has(name) ? (query.get(name) ?? "") : null);
  const within = (field: string, value: number | null) => {
    if (value !== null && duration !== null && value > duration) details[field] = `must be at most the video's duration (${duration} s)`;
  };

  if (file.kind === "thumbnail") {
    const t = get("time");
    const time = t === null ? null : seconds(t, "time", details);
    within("time", time);
    const w = get("width");
    const h = get("height");
    const width = w === null ? null : integer(w, "width", 1, IMAGE_LIMITS.maxSide, details);
    const height = h === null ? null : integer(h, "height", 1, IMAGE_LIMITS.maxSide, details);
    const f = get("fit_mode");
    if (f !== null && !FIT_MODES.includes(f as FitMode)) details.fit_mode = `must be one of ${FIT_MODES.join(", ")}`;
    if (Object.keys(details).length > 0) return { ok: false, details };
    return { ok: true, request: { kind: "thumbnail", format: file.format, time, width, height, fitMode: (f as FitMode | null) ?? "preserve" } };
  }

  const s = get("start");
  const e = get("end");
  const start = s === null ? 0 : seconds(s, "start", details);
  const end = e === null ? null : seconds(e, "end", details);
  within("start", start);
  within("end", end);
  if (start !== null && end !== null && !details.start && !details.end) {
    if (end <= start) details.end = "must be after start";
    else if (end - start > IMAGE_LIMITS.maxAnimatedSeconds) details.end = `must be at most ${IMAGE_LIMITS.maxAnimatedSeconds} s after start`;
  }
  const w = get("width");
  const width = w === null ? ANIMATED_DEFAULTS.width : integer(w, "width", 1, IMAGE_LIMITS.maxAnimatedWidth, details);
  const r = get("fps");
  const fps = r === null ? ANIMATED_DEFAULTS.fps : integer(r, "fps", 1, IMAGE_LIMITS.maxFps, details);
  if (Object.keys(details).length > 0 || start === null || width === null || fps === null) return { ok: false, details };
  return { ok: true, request: { kind: "animated", format: file.format, start, end, width, fps } };
}

/** The canonical form of a request (defaults filled in): what names the stored image, so `?width=320` and `?width=0320` share one. */
export function canonicalImage(req: ImageRequest, resolved: { time?: number; end?: number }): string {
  if (req.kind === "thumbnail") return `thumbnail.${req.format}|t=${resolved.time}|w=${req.width ?? ""}|h=${req.height ?? ""}|fit=${req.fitMode}`;
  return `animated.${req.format}|s=${req.start}|e=${resolved.end}|w=${req.width}|fps=${req.fps}`;
}
