import { createHash, randomBytes } from "node:crypto";
import { createActor, type AnyStateMachine } from "xstate";
import type { DomainEvent } from "../../machines/contracts.ts";
import { livestreamMachine, type StreamEvent } from "../../machines/livestream-machine.ts";
import type { RecordingInfo, StreamContext } from "../../machines/livestream-payload.ts";
import { videoMachine, type VideoEvent } from "../../machines/video-machine.ts";
import type { TranscodeOutcome, VideoContext } from "../../machines/video-payload.ts";
import { newId, randomToken } from "../ids.ts";
import type { EventName } from "./event-names.ts";

export interface SampleOptions {
  baseUrl: string;
  rtmpUrlBase?: string;
  now?: Date;
  /**
   * Ids, tokens and keys from a fixed seed instead of fresh random ones: the
   * OpenAPI document's examples (event-schemas.ts) are the same bytes on
   * every build, so the committed SDK document stays comparable.
   */
  fixed?: boolean;
}

/** Where a sample's ids, tokens and hex strings come from. */
interface SampleRandom {
  id(prefix: "vid" | "ls"): string;
  token(chars: number): string;
  hex(bytes: number): string;
  transcoderId(): string;
}

const RANDOM: SampleRandom = {
  id: (prefix) => newId(prefix),
  token: (chars) => randomToken(chars),
  hex: (bytes) => randomBytes(bytes).toString("hex"),
  transcoderId: () => `native-sample-${process.pid}-1`,
};

/** Deterministic stand-ins of the same shapes (sha256 of a counter). */
function fixedRandom(): SampleRandom {
  let n = 0;
  const digest = () => createHash("sha256").update(`vidlive-sample-${n++}`).digest();
  const token = (chars: number) => digest().toString("base64url").replace(/[-_]/g, "").slice(0, chars);
  return {
    id: (prefix) => `${prefix}_${token(20)}`,
    token,
    hex: (bytes) =>
      digest()
        .toString("hex")
        .slice(0, bytes * 2),
    transcoderId: () => "native-sample-1",
  };
}

/**
 * The failure of the sample VIDEO_TRANSCODING_FAILED: what the fetch stage
 * really sends for a source URL that answers 404 (src/videos/fetch-source.ts),
 * before any transcode started (so no `transcoder_id`, as in the real event).
 */
export const SAMPLE_FAILURE = { code: "SOURCE_NOT_FOUND", message: "The source answered HTTP 404." } as const;

/**
 * Runs a machine from `input` through `events`, as the pipeline drives it,
 * and returns the domain events it emitted: the very payloads the runtime
 * writes to the outbox for real entities.
 */
function emittedBy<TEvent>(machine: AnyStateMachine, input: unknown, events: TEvent[]): DomainEvent[] {
  const out: DomainEvent[] = [];
  // Delayed transitions (a booking's lead, an idle end) never fire in a sample run: a clock that schedules nothing
  // (XState's default setTimeout got a delay years ahead, which Node clamps to 1 ms with a TimeoutOverflowWarning).
  const clock = { setTimeout: () => 0, clearTimeout: () => {} };
  const actor = createActor(machine, { input, clock });
  actor.on("domain", (e: DomainEvent) => out.push(e));
  actor.start();
  for (const e of events) actor.send(e as never);
  actor.stop();
  return out;
}

function sampleVideo(now: Date, random: SampleRandom): VideoContext {
  return {
    id: random.id("vid"),
    orgId: "org_sample",
    title: "Sample video",
    kind: "UPLOAD",
    sourceUrl: "https://example.com/sample.mp4",
    drm: false,
    subtitles: false,
    tags: null,
    createdAt: new Date(now.getTime() - 90_000).toISOString(),
    progress: 0,
    transcoderId: null,
    outcome: null,
    error: null,
    stream: null,
  };
}

/** What the transcode stage reports for a 42 s 720p source: two rungs, the top one downloadable (Matroska). */
function sampleOutcome(baseUrl: string, random: SampleRandom): TranscodeOutcome {
  const media = `${baseUrl}/media/${random.hex(20)}`;
  const [hls, download, original] = [5_242_880, 3_145_728, 7_340_032];
  return {
    url: `${media}/master.m3u8`,
    durationSeconds: 42,
    sizeBytes: original,
    renditions: [
      { quality: "360p", url: `${media}/360p/index.m3u8`, width: 640, height: 360, download_url: null, download_size_bytes: null, download_password: null },
      { quality: "720p", url: `${media}/720p/index.m3u8`, width: 1280, height: 720, download_url: `${media}/downloads/720p.mkv`, download_size_bytes: String(download), download_password: null },
    ],
    storage: { total_bytes: String(hls + download + original), hls_bytes: String(hls), download_bytes: String(download), original_bytes: String(original) },
  };
}

function videoEvents(event: EventName, opts: SampleOptions, now: Date, random: SampleRandom): DomainEvent[] {
  const started: VideoEvent = { type: "TRANSCODING_STARTED", transcoderId: random.transcoderId() };
  switch (event) {
    case "VIDEO_UPLOADED":
      return emittedBy(videoMachine, sampleVideo(now, random), []);
    case "VIDEO_TRANSCODING_STARTED":
      return emittedBy(videoMachine, sampleVideo(now, random), [started]);
    case "VIDEO_PLAYABLE":
      return emittedBy<VideoEvent>(videoMachine, sampleVideo(now, random), [started, { type: "PROGRESS", percent: 20 }, { type: "PLAYABLE", url: sampleOutcome(opts.baseUrl, random).url! }]);
    case "VIDEO_TRANSCODING_COMPLETED":
      return emittedBy<VideoEvent>(videoMachine, sampleVideo(now, random), [
        started,
        { type: "PROGRESS", percent: 50 },
        { type: "TRANSCODING_COMPLETED", outcome: sampleOutcome(opts.baseUrl, random) },
      ]);
    default: // VIDEO_TRANSCODING_FAILED
      return emittedBy<VideoEvent>(videoMachine, sampleVideo(now, random), [{ type: "TRANSCODING_FAILED", error: { ...SAMPLE_FAILURE } }]);
  }
}

function sampleStream(opts: SampleOptions, now: Date, booked: boolean, random: SampleRandom): StreamContext {
  const id = random.id("ls");
  const streamKey = random.token(32);
  const rtmpBase = opts.rtmpUrlBase ?? `rtmp://${new URL(opts.baseUrl).hostname}:1935/live`;
  return {
    id,
    orgId: "org_sample",
    title: "Sample live stream",
    latency: "NORMAL",
    drm: false,
    tags: { sample: true },
    streamKey,
    rtmpUrl: `${rtmpBase}/${streamKey}?sig=${random.hex(16)}`,
    hlsUrl: `${opts.baseUrl}/live/${random.hex(20)}/index.m3u8`,
    createdAt: new Date(now.getTime() - 60 * 60_000).toISOString(),
    scheduledAt: booked ? new Date(now.getTime() + 60 * 60_000).toISOString() : null,
    startedAt: null,
    endedAt: null,
    durationSeconds: null,
    transcodingInSecs: null,
    playbackUrl: null,
    recording: null,
    error: null,
  };
}

function streamEvents(event: EventName, opts: SampleOptions, now: Date, random: SampleRandom): DomainEvent[] {
  if (event === "LIVESTREAM_SCHEDULED") return emittedBy(livestreamMachine, sampleStream(opts, now, true, random), []);
  const started: StreamEvent = { type: "MEDIA_OBSERVED", at: new Date(now.getTime() - 30 * 60_000).toISOString() };
  if (event === "LIVESTREAM_STARTED") return emittedBy(livestreamMachine, sampleStream(opts, now, false, random), [started]);
  // The encoder stopped for good: the pipeline's end, with the recording entering the library.
  const recording: RecordingInfo = { asset_id: random.id("vid"), transcoding: true, duration_seconds: 1800, resolution: "1280x720", width: 1280, height: 720 };
  return emittedBy(livestreamMachine, sampleStream(opts, now, false, random), [started, { type: "PIPELINE_ENDED", at: now.toISOString(), durationSeconds: 1800, transcodingInSecs: null, recording }]);
}

/**
 * A realistic `data` for each event of the reference, for
 * `POST /webhooks/{id}/test/`: sample contexts run through the video and live
 * stream machines with the events the pipeline sends, so the payload comes
 * from the same emit actions and payload builders as a real event's.
 */
export function sampleEventData(event: EventName, opts: SampleOptions): Record<string, unknown> {
  const now = opts.now ?? new Date();
  const random = opts.fixed ? fixedRandom() : RANDOM;
  if (event === "LIVESTREAM_OUTPUT_ACTIVE" || event === "LIVESTREAM_OUTPUT_FAILED") return sampleOutputEvent(event, now, random);
  const emitted = event.startsWith("VIDEO_") ? videoEvents(event, opts, now, random) : streamEvents(event, opts, now, random);
  const found = emitted.find((e) => e.event === event);
  if (!found) throw new Error(`No sample for ${event}: the machine did not emit it`);
  return found.data;
}

/** An output's event as src/live/outputs/output-store.ts `record` builds it (not a machine's: the runner writes it). */
function sampleOutputEvent(event: "LIVESTREAM_OUTPUT_ACTIVE" | "LIVESTREAM_OUTPUT_FAILED", now: Date, random: SampleRandom): Record<string, unknown> {
  const active = event === "LIVESTREAM_OUTPUT_ACTIVE";
  return {
    stream_id: random.id("ls"),
    output: {
      id: `out_${random.token(20)}`,
      name: "Sample platform",
      url: "rtmps://live.example-platform.com:443/app/***",
      status: active ? "active" : "reconnecting",
      bytes_sent: active ? 4096 : 52_428_800,
      started_at: new Date(now.getTime() - (active ? 0 : 60 * 60_000)).toISOString(),
      last_error: active ? null : "rtmps://live.example-platform.com:443/app/***: Connection refused",
    },
  };
}
