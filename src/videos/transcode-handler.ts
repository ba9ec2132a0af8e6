import { tmpdir } from "node:os";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { WorkRow } from "../work/work-ledger.ts";
import { type AfterCommit, PermanentWorkError, type WorkContext, type WorkHandler, type WorkResult } from "../work/work-runner.ts";
import type { VideoWork } from "./video-work.ts";
import type { Tx } from "../db/create-database.ts";
import { crashPoint } from "../faults.ts";
import type { Logger } from "../log.ts";
import type { OrgStore } from "../orgs/org-store.ts";
import type { MediaStore } from "../storage/media-store.ts";
import type { Transcoder } from "../../media/transcoder/index.ts";
import type { UploadStore } from "./upload-store.ts";
import type { DrmKeys } from "./drm-keys.ts";
import type { DrmTokens } from "./drm-tokens.ts";
import type { Transcriber } from "../../media/stt/types.ts";
import { watchUrl } from "./watch-entry.ts";
import { videoFailure } from "./video-failure.ts";
import { createSourceObtainer } from "./transcode-source.ts";
import { planOutputs, probeSource } from "./transcode-plan.ts";
import { encode, progressThrottle } from "./transcode-encode.ts";
import { prepareOutputs, storeOutputs } from "./transcode-store.ts";
import { transcodeOutcome } from "./transcode-outcome.ts";
import { createEarlyPublisher } from "./transcode-early.ts";

interface TranscodeDeps {
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
}

type SourceObtainer = ReturnType<typeof createSourceObtainer>;

/**
 * The `transcode` job, queued by the video's machine on entering `queued`: named steps, each in its own file and
 * testable alone (a clip reuses them with a trim): obtain source (transcode-source.ts) → plan outputs
 * (transcode-plan.ts) → encode (transcode-encode.ts) → store outputs (transcode-store.ts) → outcome
 * (transcode-outcome.ts), reported as TRANSCODING_COMPLETED. Safe to run again after a crash: outputs are rebuilt
 * from scratch, and the machine absorbs a repeated start, so each event fires once.
 */
export function createTranscodeHandler(deps: TranscodeDeps): WorkHandler<VideoWork, "transcode"> {
  const sources = createSourceObtainer(deps);
  return {
    run: (job: WorkRow<VideoWork, "transcode">, work: WorkContext) => runTranscode(deps, sources, job, work),

    onFailed: (tx, job, err) => failVideo(deps, tx, job, err),
  };
}

/** Debug: one line a second per running transcode would drown the info log; the percent is on the video (PROGRESS). */
const reportProgress = (runtime: ActorRuntime, videoId: string, logger: Logger) =>
  progressThrottle((percent) => {
    logger.debug("Transcode progress", { video_id: videoId, percent });
    runtime.send("video", videoId, { type: "PROGRESS", percent }).catch((err) => logger.error("Cannot record transcode progress", { err, video_id: videoId }));
  });

/** Issue 29 item 1: the growing HLS stored as it grows (transcode-early.ts); the fact PLAYABLE reported once the ladder plays. */
const reportPlayable = (deps: TranscodeDeps, videoId: string, outDir: string, logger: Logger) =>
  createEarlyPublisher({
    store: deps.store,
    videoId,
    outDir,
    logger,
    playable: async (url) => {
      await deps.runtime.send("video", videoId, { type: "PLAYABLE", url });
      logger.info("Transcode playable", { video_id: videoId });
    },
  });

/** One transcode: obtain source → plan outputs → encode → store outputs → outcome. */
async function runTranscode(deps: TranscodeDeps, sources: SourceObtainer, job: WorkRow<VideoWork, "transcode">, { signal, logger }: WorkContext): Promise<WorkResult<VideoWork>> {
  const { runtime, store } = deps;
  const record = await runtime.get("video", job.entityId);
  if (!record?.tags.has("transcoding")) return;
  const ctx = record.context;
  const workDir = await store.ensure(store.workDir(ctx.id));
  const source = await sources.obtain(ctx.id, job.payload, workDir, signal);
  if (!source) {
    // A URL is fetched again; a clip whose parent is gone fails (SOURCE_VIDEO_DELETED): the machine decides.
    if (!ctx.sourceUrl && !ctx.derivedFrom) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The video has no source.");
    // The fact: the machine goes back to fetching (and queues the fetch) in the transaction that ends this row.
    return { report: (tx) => runtime.sendIn(tx, "video", ctx.id, { type: "SOURCE_MISSING" }).then((sent) => sent.afterCommit) };
  }
  const org = await deps.orgs.getOrg(job.orgId);
  const transcoder = await deps.transcoder();
  const probe = await probeSource(transcoder, source.path, signal);
  await runtime.send("video", ctx.id, { type: "TRANSCODING_STARTED", transcoderId: transcoder.id });
  crashPoint("transcode:after-started");
  logger.info("Transcode started", { video_id: ctx.id, transcoder_id: transcoder.id, backend: transcoder.backend, duration_s: probe.durationSeconds, height: probe.height });
  const outDir = await prepareOutputs(store, ctx.id, workDir);
  // DRM: the key is made on the first run and the same row read by any repeat (licences already served stay
  // valid). It goes to the packager and nowhere else: never logged, never in a payload (only its key id).
  const drmKey = ctx.drm ? await deps.drm.keys.ensure(ctx.id, job.orgId) : null;
  const transcribe = ctx.subtitles && deps.transcriber ? { engine: deps.transcriber } : null;
  if (ctx.subtitles && !(transcribe && probe.hasAudio)) logger.warn("Transcript skipped", { video_id: ctx.id, reason: deps.transcriber ? "the source has no audio" : "no speech-to-text engine" });
  const encodeStart = performance.now();
  const plan = planOutputs(probe, org?.settings ?? null, ctx);
  const onProgress = reportProgress(runtime, ctx.id, logger);
  const early = reportPlayable(deps, ctx.id, outDir, logger);
  const { result, transcriptBytes } = await encode({
    transcoder,
    source: source.path,
    outDir,
    workDir,
    plan,
    probe,
    videoId: ctx.id,
    title: ctx.title,
    drmKey,
    transcribe,
    signal,
    timeoutMs: deps.timeoutMs,
    onProgress,
    onOutputs: early.onOutputs,
    logger,
  });
  deps.onTranscoded?.({ backend: transcoder.backend, mediaSeconds: result.durationSeconds ?? probe.durationSeconds ?? 0, wallSeconds: (performance.now() - encodeStart) / 1000 });
  await storeOutputs({ store, videoId: ctx.id, outDir, source, logger, storedEarly: early.storedSegments() });
  const drm = drmKey ? { contentId: drmKey.keyId, licenseUrl: deps.drm.tokens.mint(ctx.id).url } : null;
  const url = (file: string) => store.url(ctx.id, file);
  const outcome = transcodeOutcome({ url, watchUrl: watchUrl(store, ctx.id), result, sourceBytes: source.bytes, transcriptBytes, drm, statics: plan.statics.entries });
  if (signal.aborted) throw signal.reason;
  await runtime.send("video", ctx.id, { type: "TRANSCODING_COMPLETED", outcome });
  await store.removeWork(ctx.id);
  const drmLog = drmKey ? { drm_bytes: result.drmBytes ?? 0, drm_key_id: drmKey.keyId, packaging_ms: Math.round(result.packagingMs ?? 0) } : {};
  logger.info("Transcode completed", { video_id: ctx.id, renditions: outcome.renditions.map((r) => r.quality), hls_bytes: result.hlsBytes, ...drmLog });
}

/**
 * A video whose fetch or transcode failed for good: VIDEO_TRANSCODING_FAILED with a path-free message, in the
 * transaction that fails the work row (one commit: never a failed row beside a video still TRANSCODING); its
 * work files are removed after the commit.
 */
export async function failVideo(deps: { runtime: ActorRuntime; store: MediaStore }, tx: Tx, job: WorkRow<VideoWork>, err: unknown): Promise<AfterCommit> {
  const error = videoFailure(err, [deps.store.dataDir, tmpdir()]);
  const sent = await deps.runtime.sendIn(tx, "video", job.entityId, { type: "TRANSCODING_FAILED", error });
  return async () => {
    sent.afterCommit();
    // A live clip's copy of the recording is its only source: kept for a retry (deleted with the video, or by retention's work sweep).
    await deps.store.removeWork(job.entityId, job.payload.trim ? job.payload.sourceKey : undefined).catch(() => undefined);
  };
}
