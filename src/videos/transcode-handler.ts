import { copyFile, mkdir, rename, rm, stat } from "node:fs/promises";
import { extname, join } from "node:path";
import type { VideoContext, TranscodeOutcome, Rendition } from "../../machines/video-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { JobRow } from "../jobs/job-queue.ts";
import { PermanentJobError, type JobContext, type JobHandler } from "../jobs/job-runner.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import { defaultOrgSettings, type Rung } from "../orgs/org-settings.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { isTranscodeError, planLadder, type Transcoder } from "../../media/transcoder/index.ts";
import { fetchSource } from "./fetch-source.ts";
import type { UploadStore } from "./upload-store.ts";
import { TRANSCODE_JOB } from "./video-service.ts";

export interface TranscodePayload {
  uploadId?: string | null;
  sourcePath?: string;
}

const TRANSCODER_CODES: Record<string, string> = {
  INPUT_UNSUPPORTED: "INPUT_UNSUPPORTED",
  TIMEOUT: "TRANSCODE_TIMEOUT",
  CANCELLED: "TRANSCODE_CANCELLED",
  FFMPEG_FAILED: "TRANSCODE_FAILED",
  INVALID_JOB: "TRANSCODE_FAILED",
};

/** The `error` of VIDEO_TRANSCODING_FAILED: a stable code and a message for humans. */
function failureOf(err: unknown): { code: string; message: string } {
  if (err instanceof PermanentJobError) return { code: err.code, message: err.message };
  if (isTranscodeError(err)) return { code: TRANSCODER_CODES[err.code] ?? "TRANSCODE_FAILED", message: err.message };
  return { code: "TRANSCODE_FAILED", message: String((err as Error)?.message ?? "Transcoding failed.") };
}

/** Bad input and timeouts will fail the same way again; anything else may be transient. */
function asJobError(err: unknown): unknown {
  if (isTranscodeError(err, "INPUT_UNSUPPORTED") || isTranscodeError(err, "TIMEOUT") || isTranscodeError(err, "INVALID_JOB")) {
    const f = failureOf(err);
    return new PermanentJobError(f.code, f.message);
  }
  return err;
}

/**
 * The `transcode` job: get the source onto disk, probe it, announce the start,
 * transcode the ladder with progress, store the original, announce the result.
 * Safe to run again after a crash: outputs are rebuilt from scratch, and the
 * machine absorbs a repeated start, so each event fires once.
 */
export function createTranscodeHandler(deps: {
  runtime: ActorRuntime;
  orgs: OrgStore;
  store: MediaStore;
  uploads: UploadStore;
  transcoder: () => Promise<Transcoder>;
  guard: (url: URL) => Promise<void>;
  logger: Logger;
  concurrency: number;
  timeoutMs: number;
  sourceMaxBytes: number;
  sourceTimeoutMs: number;
}): JobHandler {
  const { runtime, store } = deps;

  async function obtainSource(job: JobRow, ctx: VideoContext, workDir: string, signal: AbortSignal): Promise<string> {
    const payload = job.payload as TranscodePayload;
    if (payload.sourcePath) return payload.sourcePath;
    if (payload.uploadId) return deps.uploads.path(payload.uploadId);
    if (!ctx.sourceUrl) throw new PermanentJobError("INPUT_UNSUPPORTED", "The video has no source.");
    const ext = extname(new URL(ctx.sourceUrl).pathname).slice(0, 8) || ".bin";
    const dest = join(workDir, `source${ext}`);
    await fetchSource(ctx.sourceUrl, dest, { signal, maxBytes: deps.sourceMaxBytes, timeoutMs: deps.sourceTimeoutMs, guard: deps.guard });
    return dest;
  }

  return {
    type: TRANSCODE_JOB,
    concurrency: deps.concurrency,
    retryDelayMs: (attempt) => Math.min(60_000, 2_000 * 2 ** (attempt - 1)),

    async run(job: JobRow, { signal, logger }: JobContext) {
      const record = await runtime.get<VideoContext>("video", job.entityId);
      if (!record || record.status !== "TRANSCODING") return;
      const ctx = record.context;
      const org = await deps.orgs.getOrg(job.orgId);
      const settings = org?.settings ?? defaultOrgSettings();
      const workDir = await store.ensure(store.workDir(ctx.id));
      const source = await obtainSource(job, ctx, workDir, signal);
      const sourceBytes = (await stat(source)).size;

      const transcoder = await deps.transcoder();
      let probe;
      try {
        probe = await transcoder.probe(source, { signal });
      } catch (err) {
        if (isTranscodeError(err, "CANCELLED")) throw err;
        throw new PermanentJobError("INPUT_UNSUPPORTED", `The source could not be read as media: ${failureOf(err).message}`);
      }
      if (!probe.hasVideo && !probe.hasAudio) throw new PermanentJobError("INPUT_UNSUPPORTED", "The source has no audio or video stream.");

      await runtime.send("video", ctx.id, { type: "TRANSCODING_STARTED", transcoderId: transcoder.id });
      logger.info("Transcode started", { video_id: ctx.id, transcoder_id: transcoder.id, backend: transcoder.backend, duration_s: probe.durationSeconds, height: probe.height });

      const ladder = settings.transcoding?.ladder ?? defaultOrgSettings().transcoding!.ladder;
      const planned = planLadder(probe, ladder);
      const top = planned.at(-1)?.name;
      const downloads = settings.downloads.rungs
        .map((r) => (r === "top" ? top : r))
        .filter((r, i, all): r is string => !!r && planned.some((p) => p.name === r) && all.indexOf(r) === i)
        .map((rung) => ({ rung, format: settings.downloads.format }));

      const outDir = store.mediaDir(ctx.id);
      await rm(outDir, { recursive: true, force: true });
      await mkdir(outDir, { recursive: true });

      let lastSent = 0;
      let lastPercent = 0;
      const result = await transcoder
        .transcode(
        { input: source, outDir, ladder, downloads },
        {
          signal,
          timeoutMs: deps.timeoutMs,
          onProgress: (percent) => {
            const now = Date.now();
            if (percent < 100 && now - lastSent < 1000) return;
            if (Math.floor(percent) <= lastPercent) return;
            lastSent = now;
            lastPercent = Math.floor(percent);
            logger.info("Transcode progress", { video_id: ctx.id, percent: lastPercent });
            runtime.send("video", ctx.id, { type: "PROGRESS", percent: lastPercent }).catch((err) => logger.error("Cannot record transcode progress", { err, video_id: ctx.id }));
          },
        },
        )
        .catch((err) => {
          throw asJobError(err);
        });
      const { hlsBytes, downloadBytes } = result;
      // Keep the original beside the outputs (storage.original_bytes); uploads and recordings are consumed.
      const originalDir = await store.ensure(join(outDir, "original"));
      const original = join(originalDir, `source${extname(source) || ".bin"}`);
      const payload = job.payload as TranscodePayload;
      if (payload.uploadId || payload.sourcePath || source.startsWith(workDir)) await rename(source, original).catch(() => copyFile(source, original));
      else await copyFile(source, original);

      const renditions: Rendition[] = result.renditions.map((r) => ({
        quality: r.quality,
        url: store.url(ctx.id, r.playlist),
        width: r.width,
        height: r.height,
        download_url: r.download ? store.url(ctx.id, r.download.file) : null,
        download_size_bytes: r.download ? String(r.download.sizeBytes) : null,
        download_password: r.download?.password ?? null,
      }));
      const outcome: TranscodeOutcome = {
        url: result.masterPlaylist ? store.url(ctx.id, result.masterPlaylist) : null,
        durationSeconds: result.durationSeconds === null ? null : Math.round(result.durationSeconds),
        sizeBytes: sourceBytes,
        renditions,
        storage: {
          total_bytes: String(hlsBytes + downloadBytes + sourceBytes),
          hls_bytes: String(hlsBytes),
          download_bytes: String(downloadBytes),
          original_bytes: String(sourceBytes),
        },
      };
      if (signal.aborted) throw signal.reason;
      await runtime.send("video", ctx.id, { type: "TRANSCODING_COMPLETED", outcome });
      await rm(workDir, { recursive: true, force: true });
      logger.info("Transcode completed", { video_id: ctx.id, renditions: renditions.map((r) => r.quality), hls_bytes: hlsBytes });
    },

    async onFailed(job: JobRow, err: unknown) {
      const error = failureOf(err);
      await runtime.send("video", job.entityId, { type: "TRANSCODING_FAILED", error });
      await rm(store.workDir(job.entityId), { recursive: true, force: true }).catch(() => undefined);
    },
  };
}
