/**
 * The backend-independent transcode: probe, plan, one HLS run per rendition
 * (independent, started together; the runner decides how many run at once),
 * merge their master playlists, one remux run for the downloads, then verify
 * and measure the files. A DRM job encodes each rendition into a scratch MP4
 * instead, packages them into encrypted DASH (package-drm.ts), makes the
 * downloads from the MP4s (always encrypted: a DRM job writes no clear media),
 * and removes them.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { abortReason } from "./abort-reason.ts";
import {
  DASH_DIR,
  DOWNLOADS_DIR,
  AUDIO_VARIANT,
  DRM_SCRATCH_PREFIX,
  HLS_DIR,
  STATIC_DIR,
  MASTER_PLAYLIST,
  buildJobRuns,
  downloadFileName,
  mediaPlaylistPath,
  partialMasterName,
  type CopyExtras,
  type EncodePlan,
  type PlannedDownloadFile,
  type PlannedRendition,
  type RunStage,
} from "./build-ffmpeg-args.ts";
import { CHUNKS_DIR, avcCodecFromTs, buildChunkedJobRuns, firstChunkPath, fixPartialMaster, planChunks, prepareChunks, type ChunkPlan } from "./chunked-runs.ts";
import { mergeAudioVariant, measureStatics, planCopyExtras } from "./copy-outputs.ts";
import { classifyFfmpegFailure } from "./classify-ffmpeg-failure.ts";
import { randomKeyHex } from "./download-key.ts";
import type { FfmpegRunner } from "./ffmpeg-runner.ts";
import { mergeMasterPlaylists, parseMasterPlaylist, parseMediaPlaylist } from "./hls-playlist.ts";
import { directoryBytes } from "./measure-files.ts";
import { mpdDurationSeconds } from "../drm/mpd.ts";
import type { PackagedDash } from "../drm/package-dash.ts";
import { packageRenditions, prepareDrm } from "./package-drm.ts";
import { planDownloads } from "./plan-downloads.ts";
import { planLadder, widthForHeight } from "./plan-ladder.ts";
import { POSTER_FILES, SPRITE_FILE, STORYBOARD_FILE, THUMBNAIL_FILE, buildStoryboardVtt, planPosters, type PosterPlan } from "./posters.ts";
import { probeInput } from "./probe-input.ts";
import { createProgressTracker } from "./progress-tracker.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { PosterFiles, ProbeResult, Rendition, TranscodeJob, TranscodeOptions, TranscodeResult, TranscoderLogger } from "./types.ts";
import { finalizeMediaPlaylists, watchHls } from "./early-hls.ts";

export const DEFAULT_SEGMENT_SECONDS = 4;
export const AUDIO_RENDITION = "audio";

export interface JobContext {
  runner: FfmpegRunner;
  signal: AbortSignal;
  onProgress?: (percent: number) => void;
  onOutputs?: TranscodeOptions["onOutputs"];
  logger: TranscoderLogger;
  transcoderId: string;
  preset: string;
}

/** Share of the progress bar per stage; without downloads HLS is all of it. A DRM job's packaging follows its encodes. */
const STAGE_WEIGHT: Record<RunStage["kind"], number> = { chunks: 85, hls: 90, mp4: 85, downloads: 10 };
const PACKAGING_WEIGHT = 5;
const STAGE_WHAT: Record<RunStage["kind"], string> = { chunks: "encode", hls: "HLS encode", mp4: "MP4 encode", downloads: "download remux" };

export async function runTranscodeJob(job: TranscodeJob, ctx: JobContext): Promise<TranscodeResult> {
  validateJob(job);
  // Before any work: a bad key is INVALID_JOB, a missing packager PACKAGER_UNAVAILABLE.
  const drm = job.drm ? prepareDrm(job.drm) : null;
  const { runner, signal } = ctx;
  const started = performance.now();
  const probe = await probeInput(runner, job.input, signal);
  const segmentSeconds = job.segmentSeconds ?? DEFAULT_SEGMENT_SECONDS;
  const renditions = planRenditions(probe, job);
  const { planned: requested, ignored } = planDownloads(job.downloads, job.ladder, renditions);
  // A DRM job never writes clear media (issue 23): its downloads are CENC MP4s (their own key, the password) whatever was asked.
  const planned = drm ? requested.map((d) => ({ ...d, format: "mp4-encrypted" as const })) : requested;
  if (ignored.length > 0) ctx.logger({ event: "transcode.downloads_ignored", transcoderId: ctx.transcoderId, ignored });
  // Posters come from the cheapest rendition's run (the first: the ladder is ascending), which decodes the whole source anyway.
  const posterPlan = job.posters ? planPosters(probe) : null;
  const extras = planCopyExtras(job, renditions, probe, drm !== null);

  const plan: EncodePlan = {
    renditions,
    hasVideo: probe.hasVideo,
    hasAudio: probe.hasAudio,
    segmentSeconds,
    frameRate: probe.frameRate,
    preset: ctx.preset,
    // Random, so the clear intermediates cannot be guessed under a served tree while the job runs.
    mp4Dir: drm ? `${DRM_SCRATCH_PREFIX}${randomKeyHex().slice(0, 16)}` : undefined,
    posters: posterPlan ? { plan: posterPlan, rendition: renditions[0]!.name } : undefined,
    // One process for the whole ladder: twice x264's automatic frame threads (measured: README, "Native concurrency").
    x264Threads: runner.runLayout === "one-run" ? 3 * os.availableParallelism() : undefined,
    audioSampleRate: probe.audioSampleRate ?? null,
  };
  // The chunked layout needs video to cut and a duration to cut by; otherwise its runner's jobs run per rendition.
  const chunks =
    runner.runLayout === "chunked" && probe.hasVideo
      ? planChunks(probe.durationSeconds, segmentSeconds, runner.parallelism ?? 1, plan.mp4Dir ? path.posix.join(plan.mp4Dir, CHUNKS_DIR) : CHUNKS_DIR)
      : null;
  const files: PlannedDownloadFile[] = planned.map((d) => {
    const file = downloadFileName(d.rendition, d.format);
    return d.format === "mp4-encrypted" ? { rendition: d.rendition, format: d.format, file, key: randomKeyHex(), kid: randomKeyHex() } : { rendition: d.rendition, format: d.format, file };
  });
  const toolPaths = runner.toolPaths({ input: job.input, outDir: job.outDir });
  const stages = chunks
    ? buildChunkedJobRuns(plan, chunks, files, toolPaths, extras)
    : buildJobRuns(plan, files, toolPaths, runner.runLayout === "chunked" ? "per-rendition" : runner.runLayout, extras);
  const progress = createProgressTracker(
    probe.durationSeconds,
    stages.flatMap((s) => {
      const weight = s.progressWeight ?? STAGE_WEIGHT[s.kind];
      return s.kind === "mp4" ? [weight, PACKAGING_WEIGHT] : [weight];
    }),
    ctx.onProgress,
  );
  prepareOutDir(job.outDir, renditions, files.length > 0, plan.mp4Dir, extras);
  if (chunks) prepareChunks(job.outDir, chunks, renditions);
  ctx.logger({
    event: "transcode.started",
    transcoderId: ctx.transcoderId,
    backend: runner.backend,
    input: job.input,
    renditions: renditions.map((r) => r.name),
    downloads: planned.map((d) => `${d.rendition}:${d.format}`),
    statics: extras.statics.map((s) => s.file),
    runs: stages.map((s) => s.runs.length),
    chunks: chunks?.starts.length ?? 0,
    drm: drm !== null,
  });

  let packaged: PackagedDash | null = null;
  let phase = 0;
  try {
    for (const stage of stages) {
      progress.phase(
        phase++,
        stage.runs.map((r) => r.weight),
        stage.runs.map((r) => r.seconds),
      );
      const watch = stage.kind === "hls" ? watchStage(job, ctx, renditions, probe, segmentSeconds, chunks) : null;
      let succeeded = false;
      try {
        await runStage(stage, job, ctx, (line, part) => progress.line(line, part));
        if (stage.kind === "hls" && chunks) fixPartialMasters(job.outDir, chunks, renditions, probe.hasAudio);
        succeeded = true;
      } finally {
        if (watch) {
          watch.stageDone = succeeded;
          await watch.watcher.stop(succeeded);
        }
      }
      if (stage.kind === "hls") {
        writeMasterPlaylist(job.outDir, renditions);
        finalizeMediaPlaylists(
          job.outDir,
          renditions.map((r) => r.name),
        );
        verifyHls(job.outDir, renditions);
      }
      if (stage.kind === "mp4" && drm && plan.mp4Dir) {
        progress.phase(phase++);
        packaged = await packageRenditions({ outDir: job.outDir, mp4Dir: plan.mp4Dir, renditions, hasVideo: probe.hasVideo, hasAudio: probe.hasAudio, ...drm, segmentSeconds, signal });
      }
      if (stage.kind === "downloads" && extras.audioVariant) {
        finalizeMediaPlaylists(job.outDir, [AUDIO_VARIANT]);
        mergeAudioVariant(job.outDir);
      }
    }
  } finally {
    // The clear intermediates never outlive the job, whatever happened.
    if (plan.mp4Dir) fs.rmSync(path.join(job.outDir, plan.mp4Dir), { recursive: true, force: true });
    if (chunks) fs.rmSync(path.join(job.outDir, chunks.dir), { recursive: true, force: true });
  }

  const result = packaged ? measureDash(job.outDir, probe, renditions, files, packaged) : measure(job.outDir, probe, renditions, files);
  if (extras.statics.length > 0) result.staticFiles = measureStatics(job.outDir, extras.statics);
  if (posterPlan) result.posters = finishPosters(job.outDir, posterPlan, result.durationSeconds ?? probe.durationSeconds ?? 0, ctx);
  progress.finish();
  const seconds = (performance.now() - started) / 1000;
  ctx.logger({
    event: "transcode.finished",
    transcoderId: ctx.transcoderId,
    backend: runner.backend,
    input: job.input,
    seconds: Math.round(seconds * 1000) / 1000,
    realtimeFactor: result.durationSeconds ? Math.round((result.durationSeconds / seconds) * 100) / 100 : null,
    hlsBytes: result.hlsBytes,
    drmBytes: result.drmBytes,
    packagingMs: Math.round(result.packagingMs),
    packagingCpuMs: packaged ? Math.round(packaged.packagerCpuMs) : 0,
    downloadBytes: result.downloadBytes,
  });
  return result;
}

function validateJob(job: TranscodeJob): void {
  if (!path.isAbsolute(job.outDir)) throw new TranscodeError("INVALID_JOB", `outDir must be absolute: ${job.outDir}`);
  if (!fs.existsSync(job.outDir) || !fs.statSync(job.outDir).isDirectory()) throw new TranscodeError("INVALID_JOB", `outDir does not exist: ${job.outDir}`);
  if (job.segmentSeconds !== undefined && !(job.segmentSeconds > 0)) throw new TranscodeError("INVALID_JOB", "segmentSeconds must be positive");
  for (const r of job.ladder) {
    // Rung names become directory names and var_stream_map tokens.
    if (!/^[A-Za-z0-9_-]+$/.test(r.name) || r.name === AUDIO_RENDITION || r.name === AUDIO_VARIANT) throw new TranscodeError("INVALID_JOB", `bad rung name: ${JSON.stringify(r.name)}`);
    if (!(r.height > 0 && r.videoBitrateKbps > 0 && r.audioBitrateKbps > 0)) throw new TranscodeError("INVALID_JOB", `rung ${r.name} needs positive height and bitrates`);
  }
}

/** Video rungs with their sizes, or the single audio-only rendition. */
function planRenditions(probe: ProbeResult, job: TranscodeJob): PlannedRendition[] {
  if (probe.hasVideo) {
    if (job.ladder.length === 0) throw new TranscodeError("INVALID_JOB", "ladder is empty");
    return planLadder(probe, job.ladder).map((r) => ({
      name: r.name,
      width: widthForHeight(probe, r.height),
      height: r.height,
      videoBitrateKbps: r.videoBitrateKbps,
      audioBitrateKbps: r.audioBitrateKbps,
    }));
  }
  // Audio-only: one rendition at the best audio bitrate the ladder offers.
  const audioKbps = job.ladder.length > 0 ? Math.max(...job.ladder.map((r) => r.audioBitrateKbps)) : 128;
  return [{ name: AUDIO_RENDITION, width: 0, height: 0, videoBitrateKbps: 0, audioBitrateKbps: audioKbps }];
}

function prepareOutDir(outDir: string, renditions: PlannedRendition[], withDownloads: boolean, mp4Dir: string | undefined, extras: CopyExtras): void {
  // Only our own subdirectories are cleared, so a retried job never mixes in
  // segments from an earlier attempt (nor a DRM job's scratch from a killed one).
  for (const dir of [HLS_DIR, DOWNLOADS_DIR, STATIC_DIR, DASH_DIR, CHUNKS_DIR, ...POSTER_FILES]) fs.rmSync(path.join(outDir, dir), { recursive: true, force: true });
  for (const name of fs.readdirSync(outDir)) if (name.startsWith(DRM_SCRATCH_PREFIX)) fs.rmSync(path.join(outDir, name), { recursive: true, force: true });
  if (mp4Dir) fs.mkdirSync(path.join(outDir, mp4Dir), { recursive: true, mode: 0o700 });
  else for (const r of renditions) fs.mkdirSync(path.join(outDir, HLS_DIR, r.name), { recursive: true });
  if (withDownloads) fs.mkdirSync(path.join(outDir, DOWNLOADS_DIR), { recursive: true });
  if (extras.statics.length > 0) fs.mkdirSync(path.join(outDir, STATIC_DIR), { recursive: true });
  if (extras.audioVariant) fs.mkdirSync(path.join(outDir, HLS_DIR, AUDIO_VARIANT), { recursive: true });
}

/**
 * Starts every run of a stage at once and leaves the pacing to the runner
 * (the wasm pool hands out idle workers, native spawns processes). The first
 * failure aborts the others; the stage settles only when all runs have, so
 * no process or worker of the job outlives it.
 */
async function runStage(stage: RunStage, job: TranscodeJob, ctx: JobContext, onLine: (line: string, part: number) => void): Promise<void> {
  const stop = new AbortController();
  const forward = () => stop.abort(ctx.signal.reason);
  if (ctx.signal.aborted) forward();
  else ctx.signal.addEventListener("abort", forward, { once: true });
  let failure: unknown = null;
  const fail = (e: unknown) => {
    failure ??= e;
    if (!stop.signal.aborted) stop.abort(e);
  };
  try {
    // Costliest first: a runner that has fewer workers than runs (wasm)
    // then starts the long pole at once.
    const order = stage.runs.map((_, i) => i).sort((a, b) => stage.runs[b]!.weight - stage.runs[a]!.weight);
    await Promise.all(
      order.map(async (part) => {
        const run = stage.runs[part]!;
        const t0 = performance.now();
        try {
          const out = await ctx.runner.run({
            tool: "ffmpeg",
            args: run.args,
            files: run.readsInput ? { input: job.input, outDir: job.outDir } : { outDir: job.outDir },
            onLine: (line) => onLine(line, part),
            signal: stop.signal,
          });
          ctx.logger({ event: "transcode.run_finished", transcoderId: ctx.transcoderId, stage: stage.kind, label: run.label, exitCode: out.exitCode, ms: Math.round(performance.now() - t0) });
          if (out.exitCode !== 0) fail(classifyFfmpegFailure(out, stage.kind === "downloads" ? "download remux" : `${STAGE_WHAT[stage.kind]} of ${run.label}`));
        } catch (e) {
          fail(e);
        }
      }),
    );
  } finally {
    ctx.signal.removeEventListener("abort", forward);
  }
  // A timeout or cancel of the job wins over what it caused in the runs.
  if (ctx.signal.aborted) throw abortReason(ctx.signal);
  if (failure !== null) throw failure;
}

/** A chunked job's joins copied their video: the HLS muxer wrote no bitrate or codecs into their master playlists (chunked-runs.ts). */
function fixPartialMasters(outDir: string, chunks: ChunkPlan, renditions: PlannedRendition[], hasAudio: boolean): void {
  for (const r of renditions) {
    const file = path.join(outDir, HLS_DIR, partialMasterName(r.name));
    if (!fs.existsSync(file)) throw new TranscodeError("FFMPEG_FAILED", `ffmpeg wrote no master playlist for ${r.name}`);
    const codec = avcCodecFromTs(fs.readFileSync(path.join(outDir, firstChunkPath(chunks, r.name))));
    if (!codec) throw new TranscodeError("FFMPEG_FAILED", `no H.264 parameters in the first chunk of ${r.name}`);
    fs.writeFileSync(file, fixPartialMaster(fs.readFileSync(file, "utf8"), r, hasAudio, codec));
  }
}

/**
 * Early playback (early-hls.ts) while the HLS stage runs: the master is written at the first playable moment
 * from the runs' one-variant masters (ffmpeg writes each with the rung's first segment). A chunked job's joins
 * need their entries fixed first (`fixPartialMasters`), so its master waits for the stage's end.
 */
function watchStage(job: TranscodeJob, ctx: JobContext, renditions: PlannedRendition[], probe: ProbeResult, segmentSeconds: number, chunks: ChunkPlan | null) {
  const partialsWritten = () => renditions.every((r) => fs.existsSync(path.join(job.outDir, HLS_DIR, partialMasterName(r.name))));
  const state = { stageDone: false, watcher: null as unknown as ReturnType<typeof watchHls> };
  state.watcher = watchHls({
    outDir: job.outDir,
    renditions: renditions.map((r) => r.name),
    durationSeconds: probe.durationSeconds,
    segmentSeconds,
    writeMaster: () => (!chunks || state.stageDone) && partialsWritten() && (writeMasterPlaylist(job.outDir, renditions, { keepParts: true }), true),
    onOutputs: ctx.onOutputs,
    logger: ctx.logger,
    transcoderId: ctx.transcoderId,
  });
  return state;
}

/** Each rendition's run wrote a one-variant master playlist; join them in ladder order (`keepParts`: the runs still write theirs). */
function writeMasterPlaylist(outDir: string, renditions: PlannedRendition[], opts: { keepParts?: boolean } = {}): void {
  const hls = path.join(outDir, HLS_DIR);
  const parts = renditions.map((r) => {
    const file = path.join(hls, partialMasterName(r.name));
    if (!fs.existsSync(file)) throw new TranscodeError("FFMPEG_FAILED", `ffmpeg wrote no master playlist for ${r.name}`);
    return fs.readFileSync(file, "utf8");
  });
  let merged: string;
  try {
    merged = mergeMasterPlaylists(parts);
  } catch (e) {
    throw new TranscodeError("FFMPEG_FAILED", `unexpected master playlist from ffmpeg: ${(e as Error).message}`);
  }
  const master = path.join(hls, MASTER_PLAYLIST);
  fs.writeFileSync(`${master}.tmp`, merged);
  fs.renameSync(`${master}.tmp`, master);
  if (opts.keepParts) return;
  for (const r of renditions) fs.rmSync(path.join(hls, partialMasterName(r.name)), { force: true });
}

function verifyHls(outDir: string, renditions: PlannedRendition[]): void {
  const master = path.join(outDir, HLS_DIR, MASTER_PLAYLIST);
  if (!fs.existsSync(master)) throw new TranscodeError("FFMPEG_FAILED", "ffmpeg wrote no master playlist");
  for (const r of renditions) {
    const media = path.join(outDir, mediaPlaylistPath(r.name));
    if (!fs.existsSync(media)) throw new TranscodeError("FFMPEG_FAILED", `ffmpeg wrote no playlist for ${r.name}`);
    if (parseMediaPlaylist(fs.readFileSync(media, "utf8")).segments.length === 0) throw new TranscodeError("FFMPEG_FAILED", `playlist for ${r.name} has no segments`);
  }
  const variants = parseMasterPlaylist(fs.readFileSync(master, "utf8"));
  if (variants.length !== renditions.length) throw new TranscodeError("FFMPEG_FAILED", `master playlist lists ${variants.length} variants, expected ${renditions.length}`);
}

function measure(outDir: string, probe: ProbeResult, renditions: PlannedRendition[], files: PlannedDownloadFile[]): TranscodeResult {
  const out = describeRenditions(outDir, renditions, files, (r) => mediaPlaylistPath(r.name));
  // Duration is measured from what was produced (the top rung's playlist),
  // which is what viewers get; the probe is only a fallback.
  const top = renditions.at(-1)!;
  const topPlaylist = parseMediaPlaylist(fs.readFileSync(path.join(outDir, mediaPlaylistPath(top.name)), "utf8"));
  const measured = Math.round(topPlaylist.totalDuration * 1000) / 1000;
  return {
    masterPlaylist: path.posix.join(HLS_DIR, MASTER_PLAYLIST),
    renditions: out,
    durationSeconds: measured > 0 ? measured : probe.durationSeconds,
    hlsBytes: directoryBytes(path.join(outDir, HLS_DIR)),
    downloadBytes: out.reduce((sum, r) => sum + (r.download?.sizeBytes ?? 0), 0),
    drmBytes: 0,
    packagingMs: 0,
    probe,
  };
}

/** A DRM job's result: the MPDs under dash/ instead of HLS playlists. */
function measureDash(outDir: string, probe: ProbeResult, renditions: PlannedRendition[], files: PlannedDownloadFile[], packaged: PackagedDash): TranscodeResult {
  const out = describeRenditions(outDir, renditions, files, (r) => path.posix.join(DASH_DIR, packaged.renditions.find((p) => p.name === r.name)!.mpd));
  const measured = mpdDurationSeconds(fs.readFileSync(path.join(outDir, DASH_DIR, packaged.manifest), "utf8"));
  return {
    masterPlaylist: path.posix.join(DASH_DIR, packaged.manifest),
    renditions: out,
    durationSeconds: measured && measured > 0 ? Math.round(measured * 1000) / 1000 : probe.durationSeconds,
    hlsBytes: 0,
    downloadBytes: out.reduce((sum, r) => sum + (r.download?.sizeBytes ?? 0), 0),
    drmBytes: directoryBytes(path.join(outDir, DASH_DIR)),
    packagingMs: packaged.packagingMs,
    probe,
  };
}

function describeRenditions(outDir: string, renditions: PlannedRendition[], files: PlannedDownloadFile[], playlist: (r: PlannedRendition) => string): Rendition[] {
  return renditions.map((r) => {
    const dl = files.find((f) => f.rendition === r.name);
    return {
      quality: r.name,
      width: r.width,
      height: r.height,
      playlist: playlist(r),
      download: dl
        ? {
            file: dl.file,
            format: dl.format,
            password: dl.format === "mp4-encrypted" ? dl.key! : null,
            sizeBytes: fileSize(path.join(outDir, dl.file), dl.rendition),
          }
        : null,
    };
  });
}

/**
 * The images were written by the encode run; the storyboard's cues are
 * written now, against the measured duration. Best effort: a missing image
 * (e.g. a probe duration far past the real end) leaves the video without
 * posters rather than failing it.
 */
function finishPosters(outDir: string, plan: PosterPlan, durationSeconds: number, ctx: JobContext): PosterFiles | null {
  const missing = [THUMBNAIL_FILE, SPRITE_FILE].filter((f) => !(fs.statSync(path.join(outDir, f), { throwIfNoEntry: false })?.size ?? 0));
  if (missing.length > 0 || !(durationSeconds > 0)) {
    ctx.logger({ event: "transcode.posters_missing", transcoderId: ctx.transcoderId, missing });
    for (const f of POSTER_FILES) fs.rmSync(path.join(outDir, f), { force: true });
    return null;
  }
  fs.writeFileSync(path.join(outDir, STORYBOARD_FILE), buildStoryboardVtt(plan, durationSeconds));
  return {
    thumbnail: THUMBNAIL_FILE,
    sprite: SPRITE_FILE,
    storyboard: STORYBOARD_FILE,
    thumbnailWidth: plan.thumbnailWidth,
    thumbnailHeight: plan.thumbnailHeight,
    bytes: POSTER_FILES.reduce((sum, f) => sum + fs.statSync(path.join(outDir, f)).size, 0),
  };
}

function fileSize(file: string, rendition: string): number {
  try {
    const size = fs.statSync(file).size;
    if (size > 0) return size;
  } catch {
    // fall through
  }
  throw new TranscodeError("FFMPEG_FAILED", `download for ${rendition} was not written`);
}
