import { copyFile, mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import type { TranscodeOutcome, Rendition } from "../../machines/video-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { WorkRow } from "../work/work-ledger.ts";
import { PermanentWorkError, type WorkContext, type WorkHandler, type WorkResult } from "../work/work-runner.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import { defaultOrgSettings } from "../orgs/org-settings.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { isTranscodeError, planLadder, type Transcoder } from "../../media/transcoder/index.ts";
import type { TranscodePayload } from "./transcode-payload.ts";
import type { UploadStore } from "./upload-store.ts";

export type { TranscodePayload };
import { asWorkError, videoFailure } from "./video-failure.ts";

/**
 * The `transcode` job: its source is already on disk (an upload, a recording,
 * or what the `fetch-source` stage wrote); probe it, announce the start,
 * transcode the ladder with progress, keep the original outside the served
 * tree, announce the result. Safe to run again after a crash: outputs are
 * rebuilt from scratch, and the machine absorbs a repeated start, so each
 * event fires once.
 */
export function createTranscodeHandler(deps: {
  runtime: ActorRuntime;
  orgs: OrgStore;
  store: MediaStore;
  uploads: UploadStore;
  transcoder: () => Promise<Transcoder>;
  logger: Logger;
  timeoutMs: number;
}): WorkHandler<"transcode"> {
  const { runtime, store } = deps;

  /**
   * The source on disk, or null when it must be fetched first (a job queued
   * before fetching was its own stage, or a fetched copy that went missing).
   * A run repeated after a crash that had already moved the source to the
   * originals uses that copy.
   */
  async function localSource(job: WorkRow<"transcode">): Promise<string | null> {
    const payload: TranscodePayload = job.payload;
    const path = payload.uploadId ? deps.uploads.path(payload.uploadId) : payload.sourcePath;
    if (!path) return null;
    if (await Bun.file(path).exists()) return path;
    const kept = await readdir(store.originalDir(job.entityId)).catch(() => [] as string[]);
    const original = kept.find((f) => f.startsWith("source"));
    if (original) return join(store.originalDir(job.entityId), original);
    return payload.fetched ? null : path;
  }

  return {
    async run(job: WorkRow<"transcode">, { signal, logger }: WorkContext): Promise<WorkResult> {
      const record = await runtime.get("video", job.entityId);
      if (!record?.tags.has("transcoding")) return;
      const ctx = record.context;
      const source = await localSource(job);
      if (!source) {
        if (!ctx.sourceUrl) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The video has no source.");
        return { next: { type: "fetch-source", payload: {} } };
      }
      const org = await deps.orgs.getOrg(job.orgId);
      const settings = org?.settings ?? defaultOrgSettings();
      const workDir = await store.ensure(store.workDir(ctx.id));
      const sourceBytes = (await stat(source)).size;

      const transcoder = await deps.transcoder();
      let probe: Awaited<ReturnType<Transcoder["probe"]>>;
      try {
        probe = await transcoder.probe(source, { signal });
      } catch (err) {
        if (isTranscodeError(err, "CANCELLED")) throw err;
        throw new PermanentWorkError("INPUT_UNSUPPORTED", `The source could not be read as media: ${videoFailure(err).message}`);
      }
      if (!probe.hasVideo && !probe.hasAudio) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The source has no audio or video stream.");

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
          throw asWorkError(err);
        });
      const { hlsBytes, downloadBytes } = result;
      // Keep the original (storage.original_bytes) outside the served tree: it is
      // never a media URL. Uploads, recordings and fetched copies are consumed.
      const originalDir = store.originalDir(ctx.id);
      const original = join(originalDir, `source${extname(source).slice(0, 8) || ".bin"}`);
      if (source !== original) {
        await rm(originalDir, { recursive: true, force: true });
        await store.ensure(originalDir);
        await rename(source, original).catch(() => copyFile(source, original));
      }

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

    onFailed: (job, err) => failVideo(deps, job, err),
  };
}

/** A video whose fetch or transcode failed for good: VIDEO_TRANSCODING_FAILED with a path-free message, work files removed. */
export async function failVideo(deps: { runtime: ActorRuntime; store: MediaStore }, job: WorkRow, err: unknown): Promise<void> {
  const error = videoFailure(err, [deps.store.dataDir, tmpdir()]);
  await deps.runtime.send("video", job.entityId, { type: "TRANSCODING_FAILED", error });
  await rm(deps.store.workDir(job.entityId), { recursive: true, force: true }).catch(() => undefined);
}
