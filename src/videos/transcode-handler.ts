import { mkdir, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, extname, join } from "node:path";
import type { TranscodeOutcome, Rendition } from "../../machines/video-payload.ts";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { WorkRow } from "../work/work-ledger.ts";
import { type AfterCommit, PermanentWorkError, type WorkContext, type WorkHandler, type WorkResult } from "../work/work-runner.ts";
import type { Tx } from "../db/create-database.ts";
import { crashPoint } from "../faults.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import { defaultOrgSettings } from "../orgs/org-settings.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { isTranscodeError, planLadder, type Transcoder } from "../../media/transcoder/index.ts";
import type { TranscodePayload } from "../../machines/video-payload.ts";
import type { UploadStore } from "./upload-store.ts";
import type { DrmKeys } from "./drm-keys.ts";
import type { DrmTokens } from "./drm-tokens.ts";
import type { Transcriber } from "../../media/stt/types.ts";
import { startTranscription, SUMMARY_FILE, TRANSCRIPT_FILE, writeTranscriptOutputs } from "./transcript-outputs.ts";
import { watchUrl, writeWatchEntry } from "./watch-entry.ts";

export type { TranscodePayload };
import { asWorkError, permanentFailure, UNREADABLE_SOURCE, videoFailure } from "./video-failure.ts";

/**
 * The `transcode` job: its source is already stored (an upload, a recording,
 * or what the `fetch-source` stage wrote), on this disk or in the bucket
 * (downloaded to scratch); probe it, announce the start,
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
  /** A video with `drm: true`: its content key (made on the first run, reused by a repeat) and the licence URL's token. */
  drm: { keys: DrmKeys; tokens: DrmTokens };
  /** The speech-to-text engine made at start (null: none installed; a video with `subtitles` then completes without a transcript). */
  transcriber: Transcriber | null;
  /** Each completed transcode's media seconds and wall seconds, by backend (the realtime factor metric). */
  onTranscoded?: (t: { backend: string; mediaSeconds: number; wallSeconds: number }) => void;
}): WorkHandler<"transcode"> {
  const { runtime, store } = deps;
  const objects = store.objects;

  /**
   * The source as a local file, or null when it must be fetched first (a job
   * queued before fetching was its own stage, or a fetched copy that went
   * missing). In order: the file on this disk (STORAGE=local, an upload or a
   * recording this process still has); its object (STORAGE=s3: `uploads/<id>`,
   * a recording `recordings/<stream>.flv`, a fetched `work/<video>/source.*`),
   * downloaded to scratch; the original a run repeated after a crash had
   * already kept. `key` is the source's object key (null for a file outside
   * DATA_DIR).
   */
  async function findSource(job: WorkRow<"transcode">, workDir: string): Promise<{ path: string; key: string | null } | null> {
    const payload: TranscodePayload = job.payload;
    const key = payload.uploadId ? deps.uploads.key(payload.uploadId) : (payload.sourceKey ?? (payload.sourcePath ? store.keyOf(payload.sourcePath) : null));
    // A fetched source is found by its key, never by the fetching process's path: on STORAGE=s3 a file there is
    // scratch (another process's, or a copy an earlier run of this one was downloading when it died).
    const path = payload.uploadId ? deps.uploads.path(payload.uploadId) : payload.sourceKey ? objects.localPath(payload.sourceKey) : payload.sourcePath;
    if (path && (await Bun.file(path).exists())) return { path, key };
    if (key && objects.kind !== "local") {
      const copy = join(workDir, `source${extname(key)}`);
      if (await downloadWhole(key, copy)) return { path: copy, key };
    }
    for await (const kept of objects.list(store.originalKey(job.entityId))) {
      if (!basename(kept.key).startsWith("source")) continue;
      const local = objects.localPath(kept.key);
      if (local) return { path: local, key: kept.key };
      const copy = join(workDir, basename(kept.key));
      if (await downloadWhole(kept.key, copy)) return { path: copy, key: kept.key };
    }
    return payload.fetched || !path ? null : { path, key };
  }

  /**
   * Downloads an object to `path` whole or not at all: into a part file, renamed once complete. A process
   * killed mid-download (`kill -9`, a lost node) left a truncated `path` that the run resuming its work took
   * for the source: an empty one failed the video for good ("input is empty"), a partial one completed it
   * cut short (test/scaleout.test.ts).
   */
  async function downloadWhole(key: string, path: string): Promise<boolean> {
    const part = `${path}.part-${crypto.randomUUID()}`;
    try {
      if (!(await objects.download(key, part))) return false;
      await rename(part, path);
      return true;
    } finally {
      await rm(part, { force: true });
    }
  }

  return {
    async run(job: WorkRow<"transcode">, { signal, logger }: WorkContext): Promise<WorkResult> {
      const record = await runtime.get("video", job.entityId);
      if (!record?.tags.has("transcoding")) return;
      const ctx = record.context;
      const workDir = await store.ensure(store.workDir(ctx.id));
      const found = await findSource(job, workDir);
      if (!found) {
        if (!ctx.sourceUrl) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The video has no source.");
        // The fact: the machine goes back to fetching (and queues the fetch) in the transaction that ends this row.
        return { report: (tx) => runtime.sendIn(tx, "video", ctx.id, { type: "SOURCE_MISSING" }).then((sent) => sent.afterCommit) };
      }
      const source = found.path;
      const org = await deps.orgs.getOrg(job.orgId);
      const settings = org?.settings ?? defaultOrgSettings();
      const sourceBytes = (await stat(source)).size;
      // A presigned S3 PUT can be repeated until it expires: an object replaced after its registration's check is checked again.
      if (job.payload.uploadId && objects.kind !== "local") {
        const limit = await deps.uploads.maxBytesOf(job.payload.uploadId);
        if (limit !== null && sourceBytes > limit) throw new PermanentWorkError("SOURCE_TOO_LARGE", `The upload is larger than ${limit} bytes.`);
      }

      const transcoder = await deps.transcoder();
      let probe: Awaited<ReturnType<Transcoder["probe"]>>;
      try {
        probe = await transcoder.probe(source, { signal });
      } catch (err) {
        if (isTranscodeError(err, "CANCELLED")) throw err;
        // In the user's terms; ffprobe's own words stay in the error's cause (logged by the runner).
        const f = videoFailure(err);
        throw permanentFailure("INPUT_UNSUPPORTED", f.code === "INPUT_UNSUPPORTED" ? f.message : UNREADABLE_SOURCE, err);
      }
      if (!probe.hasVideo && !probe.hasAudio) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The source has no audio or video stream.");

      await runtime.send("video", ctx.id, { type: "TRANSCODING_STARTED", transcoderId: transcoder.id });
      crashPoint("transcode:after-started");
      logger.info("Transcode started", { video_id: ctx.id, transcoder_id: transcoder.id, backend: transcoder.backend, duration_s: probe.durationSeconds, height: probe.height });

      const ladder = settings.transcoding?.ladder ?? defaultOrgSettings().transcoding!.ladder;
      const planned = planLadder(probe, ladder);
      const top = planned.at(-1)?.name;
      const downloads = settings.downloads.rungs
        .map((r) => (r === "top" ? top : r))
        .filter((r, i, all): r is string => !!r && planned.some((p) => p.name === r) && all.indexOf(r) === i)
        .map((rung) => ({ rung, format: settings.downloads.format }));

      // Outputs are rebuilt from scratch. STORAGE=local: written in place (the
      // store's putDir is then a no-op); s3: into scratch, uploaded after.
      const mediaKey = store.mediaKey(ctx.id);
      const outDir = objects.localPath(mediaKey) ?? join(workDir, "media");
      await rm(outDir, { recursive: true, force: true });
      if (objects.kind !== "local") await objects.deletePrefix(mediaKey);
      await mkdir(outDir, { recursive: true });

      // DRM: the key is made on the first run and the same row read by any repeat (licences already served stay
      // valid). It goes to the packager and nowhere else: never logged, never in a payload (only its key id).
      const drmKey = ctx.drm ? await deps.drm.keys.ensure(ctx.id, job.orgId) : null;

      // Subtitles: the speech is extracted and transcribed beside the encode (same signal), so COMPLETED waits
      // only for the slower of the two. A source without audio has nothing to transcribe.
      const transcription =
        ctx.subtitles && deps.transcriber && probe.hasAudio ? startTranscription({ transcriber: deps.transcriber, input: source, workDir, signal, timeoutMs: deps.timeoutMs }) : null;
      if (ctx.subtitles && !transcription) logger.warn("Transcript skipped", { video_id: ctx.id, reason: deps.transcriber ? "the source has no audio" : "no speech-to-text engine" });

      let lastSent = 0;
      let lastPercent = 0;
      const encodeStart = performance.now();
      const result = await transcoder
        .transcode(
          // posters (issue 16): thumbnail + storyboard from the cheapest rung's run; DRM videos too (images are not the protected content).
          { input: source, outDir, ladder, downloads, posters: true, ...(drmKey ? { drm: drmKey } : {}) },
          {
            signal,
            timeoutMs: deps.timeoutMs,
            onProgress: (percent) => {
              const now = Date.now();
              if (percent < 100 && now - lastSent < 1000) return;
              if (Math.floor(percent) <= lastPercent) return;
              lastSent = now;
              lastPercent = Math.floor(percent);
              // Debug: one line a second per running transcode would drown the info log; the percent is on the video (PROGRESS).
              logger.debug("Transcode progress", { video_id: ctx.id, percent: lastPercent });
              runtime.send("video", ctx.id, { type: "PROGRESS", percent: lastPercent }).catch((err) => logger.error("Cannot record transcode progress", { err, video_id: ctx.id }));
            },
          },
        )
        .catch((err) => {
          transcription?.cancel();
          // The tool's last lines are for operators (the video's message says what failed in the user's terms).
          if (isTranscodeError(err) && err.logTail.length > 0) logger.warn("Transcode tool output", { video_id: ctx.id, code: err.code, log_tail: err.logTail });
          throw asWorkError(err);
        });
      deps.onTranscoded?.({ backend: transcoder.backend, mediaSeconds: result.durationSeconds ?? probe.durationSeconds ?? 0, wallSeconds: (performance.now() - encodeStart) / 1000 });
      const { hlsBytes, downloadBytes } = result;
      const drmBytes = result.drmBytes ?? 0;
      // Never serve clear output as a protected video: a DRM job must have produced the encrypted DASH manifest.
      if (drmKey && !result.masterPlaylist.endsWith(".mpd")) throw new PermanentWorkError("DRM_PACKAGING_FAILED", "DRM packaging produced no DASH manifest.");
      // Written into outDir before it is stored (s3: scratch, then putDir). A failed transcription does not fail the video.
      let transcriptBytes: number | null = null;
      if (transcription) {
        const done = await transcription.result;
        if (signal.aborted) throw signal.reason;
        if (done.ok) {
          try {
            const duration = result.durationSeconds ?? probe.durationSeconds ?? 0;
            transcriptBytes = (await writeTranscriptOutputs({ outDir, words: done.words, durationSeconds: duration, title: ctx.title, manifest: result.masterPlaylist })).bytes;
            logger.info("Transcript written", { video_id: ctx.id, engine: deps.transcriber!.name, words: done.words.length, transcribe_ms: Math.round(done.ms), bytes: transcriptBytes });
          } catch (err) {
            logger.warn("Transcript failed; the video completes without it", { video_id: ctx.id, err });
          }
        } else {
          logger.warn("Transcript failed; the video completes without it", { video_id: ctx.id, err: done.error });
        }
      }
      // The watch page's way from the media token back to the video (stored with the ladder, never served).
      await writeWatchEntry(outDir, ctx.id);
      const storing = performance.now();
      const stored = await objects.putDir(mediaKey, outDir, { move: true });
      // Keep the original (storage.original_bytes) outside the served tree: it is
      // never a media URL. Uploads, recordings and fetched copies are consumed.
      const originalKey = `${store.originalKey(ctx.id)}/source${extname(source).slice(0, 8) || ".bin"}`;
      if (found.key !== originalKey) {
        await objects.deletePrefix(store.originalKey(ctx.id));
        await objects.putFile(originalKey, source, { move: true });
        // STORAGE=local: the move consumed it; s3: the source object goes once the original is stored.
        if (found.key && objects.kind !== "local") await objects.delete(found.key);
      }
      // Everything stored, the source consumed, COMPLETED not yet sent: a repeat must find the kept original.
      crashPoint("transcode:after-store");
      if (objects.kind !== "local") logger.info("Transcode outputs stored", { video_id: ctx.id, files: stored.files, bytes: stored.bytes + sourceBytes, ms: Math.round(performance.now() - storing) });

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
        // Spec 2.6: "hls and original on a normal run, drm on a DRM run"; `transcript_bytes` (issue 12) when a
        // transcript was written: transcript.vtt, summary.txt and the subtitle rendition, counted in total_bytes.
        storage: {
          ...(drmKey
            ? {
                total_bytes: String(drmBytes + downloadBytes + sourceBytes + (transcriptBytes ?? 0)),
                drm_bytes: String(drmBytes),
                download_bytes: String(downloadBytes),
                original_bytes: String(sourceBytes),
              }
            : {
                total_bytes: String(hlsBytes + downloadBytes + sourceBytes + (transcriptBytes ?? 0)),
                hls_bytes: String(hlsBytes),
                download_bytes: String(downloadBytes),
                original_bytes: String(sourceBytes),
              }),
          ...(transcriptBytes !== null ? { transcript_bytes: String(transcriptBytes) } : {}),
        },
        ...(transcriptBytes !== null ? { transcript: { url: store.url(ctx.id, TRANSCRIPT_FILE), summaryUrl: store.url(ctx.id, SUMMARY_FILE) } } : {}),
        ...(result.posters ? { posters: { thumbnailUrl: store.url(ctx.id, result.posters.thumbnail), storyboardUrl: store.url(ctx.id, result.posters.storyboard) } } : {}),
        watchUrl: watchUrl(store, ctx.id),
        // The stored events carry a token minted now; GET answers a fresh one each time (video-resource.ts).
        ...(drmKey ? { drm: { contentId: drmKey.keyId, licenseUrl: deps.drm.tokens.mint(ctx.id).url } } : {}),
      };
      if (signal.aborted) throw signal.reason;
      await runtime.send("video", ctx.id, { type: "TRANSCODING_COMPLETED", outcome });
      await store.removeWork(ctx.id);
      logger.info("Transcode completed", {
        video_id: ctx.id,
        renditions: renditions.map((r) => r.quality),
        hls_bytes: hlsBytes,
        ...(drmKey ? { drm_bytes: drmBytes, drm_key_id: drmKey.keyId, packaging_ms: Math.round(result.packagingMs ?? 0) } : {}),
      });
    },

    onFailed: (tx, job, err) => failVideo(deps, tx, job, err),
  };
}

/**
 * A video whose fetch or transcode failed for good: VIDEO_TRANSCODING_FAILED with a path-free message, in the
 * transaction that fails the work row (one commit: never a failed row beside a video still TRANSCODING); its
 * work files are removed after the commit.
 */
export async function failVideo(deps: { runtime: ActorRuntime; store: MediaStore }, tx: Tx, job: WorkRow, err: unknown): Promise<AfterCommit> {
  const error = videoFailure(err, [deps.store.dataDir, tmpdir()]);
  const sent = await deps.runtime.sendIn(tx, "video", job.entityId, { type: "TRANSCODING_FAILED", error });
  return async () => {
    sent.afterCommit();
    await deps.store.removeWork(job.entityId).catch(() => undefined);
  };
}
