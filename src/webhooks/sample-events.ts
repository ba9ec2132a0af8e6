import { fullStream, smallStream, type StreamContext } from "../../machines/livestream-payload.ts";
import { videoData, type VideoContext } from "../../machines/video-payload.ts";
import { newId, randomToken } from "../ids.ts";
import type { EventName } from "./event-names.ts";

export interface SampleOptions {
  baseUrl: string;
  rtmpUrlBase?: string;
  now?: Date;
}

function sampleVideo(baseUrl: string, createdAt: string): VideoContext {
  const id = newId("vid");
  const media = `${baseUrl}/media/${randomToken(24)}`;
  return {
    id,
    orgId: "org_sample",
    title: "Sample video",
    kind: "UPLOAD",
    sourceUrl: "https://example.com/sample.mp4",
    drm: false,
    subtitles: false,
    tags: null,
    createdAt,
    progress: 100,
    transcoderId: null,
    error: null,
    stream: null,
    outcome: {
      url: `${media}/master.m3u8`,
      durationSeconds: 42,
      sizeBytes: 7_340_032,
      renditions: [
        { quality: "360p", url: `${media}/360p/index.m3u8`, width: 640, height: 360, download_url: null, download_size_bytes: null, download_password: null },
        { quality: "720p", url: `${media}/720p/index.m3u8`, width: 1280, height: 720, download_url: `${media}/downloads/720p.mkv`, download_size_bytes: "5242880", download_password: null },
      ],
      storage: { total_bytes: "12582912", hls_bytes: "5242880", original_bytes: "2097152" },
    },
  };
}

function sampleStream(opts: SampleOptions, now: Date): StreamContext {
  const id = newId("ls");
  const streamKey = randomToken(24);
  const rtmpBase = opts.rtmpUrlBase ?? `rtmp://${new URL(opts.baseUrl).hostname}:1935/live`;
  const started = new Date(now.getTime() - 30 * 60_000).toISOString();
  return {
    id,
    orgId: "org_sample",
    title: "Sample live stream",
    latency: "NORMAL",
    drm: false,
    tags: { sample: true },
    streamKey,
    rtmpUrl: `${rtmpBase}/${streamKey}?sig=${randomToken(43)}`,
    hlsUrl: `${opts.baseUrl}/live/${id}/index.m3u8`,
    createdAt: new Date(now.getTime() - 60 * 60_000).toISOString(),
    scheduledAt: null,
    startedAt: started,
    endedAt: now.toISOString(),
    durationSeconds: 1800,
    transcodingInSecs: null,
    playbackUrl: null,
    recording: { asset_id: newId("vid"), transcoding: true, duration_seconds: 1800, resolution: "1280x720", width: 1280, height: 720 },
    error: null,
  };
}

/**
 * A realistic `data` for each event of the reference, made by the same payload
 * builders the machines use, for `POST /webhooks/{id}/test/`.
 */
export function sampleEventData(event: EventName, opts: SampleOptions): Record<string, unknown> {
  const now = opts.now ?? new Date();
  const iso = now.toISOString();
  switch (event) {
    case "VIDEO_UPLOADED":
      return videoData({ ...sampleVideo(opts.baseUrl, iso), outcome: null, progress: 0 }, "TRANSCODING");
    case "VIDEO_TRANSCODING_STARTED":
      return videoData({ ...sampleVideo(opts.baseUrl, iso), outcome: null, progress: 0, transcoderId: `trn_${randomToken(12)}` }, "TRANSCODING");
    case "VIDEO_TRANSCODING_COMPLETED":
      return videoData(sampleVideo(opts.baseUrl, iso), "COMPLETED");
    case "VIDEO_TRANSCODING_FAILED":
      return videoData({ ...sampleVideo(opts.baseUrl, iso), outcome: null, error: { code: "SOURCE_UNREADABLE", message: "The source has no decodable video or audio stream." } }, "ERROR");
    case "LIVESTREAM_SCHEDULED": {
      const ctx = sampleStream(opts, now);
      return { stream: fullStream({ ...ctx, scheduledAt: new Date(now.getTime() + 3_600_000).toISOString(), startedAt: null, endedAt: null }, "SCHEDULED") };
    }
    case "LIVESTREAM_STARTED":
      return { stream: fullStream({ ...sampleStream(opts, now), endedAt: null }, "LIVE") };
    case "LIVESTREAM_ENDED":
    case "LIVESTREAM_RECORDING_READY": {
      const ctx = sampleStream(opts, now);
      return { stream: smallStream(ctx), recording: ctx.recording };
    }
  }
}
