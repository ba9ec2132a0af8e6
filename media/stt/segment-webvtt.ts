import { type Cue, parseWebVtt, renderCue } from "./webvtt.ts";

/**
 * ffmpeg's mpegts muxer starts timestamps at 1.4 s (its default muxdelay,
 * 126000 ticks of 90 kHz). Measured on our HLS segments (libx264 veryfast,
 * 25 fps): the first video PTS is 133200 (1.48 s: the muxer also shifts
 * everything by the two-frame B-frame delay), audio 131110 (minus AAC
 * priming). Source time 0 is the first video PTS, so the pipeline passes
 * that (`firstSegmentPts`) when it can; this default is off by at most a
 * few frames, which captions do not show.
 */
export const DEFAULT_MPEGTS = 126000;

export interface SegmentedVtt {
  /** The media playlist (`#EXTM3U` ... `#EXT-X-ENDLIST`) naming the segments relatively. */
  playlist: string;
  segments: Array<{ name: string; text: string }>;
}

export function subtitleSegmentName(i: number): string {
  return `sub-${String(i).padStart(5, "0")}.vtt`;
}

/**
 * Cuts a WebVTT file into a segmented WebVTT HLS rendition whose segments
 * line up with the video's (same `segmentSeconds`, cut at the same
 * instants). Each segment repeats the cues that overlap it (players drop the
 * duplicates), and maps local time 0 to the video's first PTS with
 * `X-TIMESTAMP-MAP`, so cue times stay those of the source.
 */
export function segmentWebVtt(vtt: string, segmentSeconds: number, totalSeconds: number, opts: { mpegts?: number } = {}): SegmentedVtt {
  if (!(segmentSeconds > 0)) throw new Error("segmentSeconds must be positive");
  const total = Math.max(0, totalSeconds);
  const { cues } = parseWebVtt(vtt);
  const mpegts = Math.round(opts.mpegts ?? DEFAULT_MPEGTS);
  // 1 ms of slack: a 6.0004 s video is one segment of 6 s, as ffmpeg cuts it.
  const count = Math.max(1, Math.ceil((total - 0.001) / segmentSeconds));
  const segments: SegmentedVtt["segments"] = [];
  const durations: number[] = [];
  for (let i = 0; i < count; i++) {
    const from = i * segmentSeconds;
    const to = i === count - 1 ? Math.max(total, from) : from + segmentSeconds;
    durations.push(to - from);
    const inside = cues.filter((c: Cue) => c.end > from && c.start < to);
    const header = `WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:${mpegts},LOCAL:00:00:00.000\n`;
    segments.push({ name: subtitleSegmentName(i), text: `${header}\n${inside.map(renderCue).join("\n\n")}${inside.length ? "\n" : ""}` });
  }
  const target = Math.max(1, Math.ceil(Math.max(...durations) - 0.001));
  const lines = ["#EXTM3U", "#EXT-X-VERSION:3", `#EXT-X-TARGETDURATION:${target}`, "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD"];
  segments.forEach((s, i) => {
    lines.push(`#EXTINF:${(durations[i] ?? 0).toFixed(3)},`, s.name);
  });
  lines.push("#EXT-X-ENDLIST");
  return { playlist: `${lines.join("\n")}\n`, segments };
}

/**
 * The first video PTS (90 kHz) of an HLS TS segment, the MPEGTS value of
 * X-TIMESTAMP-MAP; audio's when there is no video; null when ffprobe is
 * missing or fails (use DEFAULT_MPEGTS).
 */
export async function firstSegmentPts(tsPath: string): Promise<number | null> {
  if (!Bun.which("ffprobe")) return null;
  const proc = Bun.spawn(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,start_pts", "-of", "json", tsPath], { stdout: "pipe", stderr: "ignore" });
  const text = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) return null;
  try {
    const streams = (JSON.parse(text).streams ?? []) as Array<{ codec_type?: string; start_pts?: number }>;
    const pick = streams.find((s) => s.codec_type === "video") ?? streams.find((s) => s.codec_type === "audio");
    return typeof pick?.start_pts === "number" ? pick.start_pts : null;
  } catch {
    return null;
  }
}
