/**
 * The backend-independent transcode: probe, plan, one HLS run for the whole
 * ladder, one remux run for the downloads, then verify and measure the files.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  DOWNLOADS_DIR,
  HLS_DIR,
  MASTER_PLAYLIST,
  buildDownloadArgs,
  buildHlsArgs,
  downloadFileName,
  mediaPlaylistPath,
  type EncodePlan,
  type PlannedDownloadFile,
  type PlannedRendition,
} from './build-ffmpeg-args.ts';
import { classifyFfmpegFailure } from './classify-ffmpeg-failure.ts';
import { randomKeyHex } from './download-key.ts';
import type { FfmpegRunner, RunOutcome } from './ffmpeg-runner.ts';
import { parseMasterPlaylist, parseMediaPlaylist } from './hls-playlist.ts';
import { directoryBytes } from './measure-files.ts';
import { planDownloads } from './plan-downloads.ts';
import { planLadder, widthForHeight } from './plan-ladder.ts';
import { probeInput } from './probe-input.ts';
import { createProgressTracker } from './progress-tracker.ts';
import { TranscodeError } from './transcode-error.ts';
import type { ProbeResult, Rendition, TranscodeJob, TranscodeResult, TranscoderLogger } from './types.ts';

export const DEFAULT_SEGMENT_SECONDS = 4;
export const AUDIO_RENDITION = 'audio';

export interface JobContext {
  runner: FfmpegRunner;
  signal: AbortSignal;
  onProgress?: (percent: number) => void;
  logger: TranscoderLogger;
  transcoderId: string;
  preset: string;
}

export async function runTranscodeJob(job: TranscodeJob, ctx: JobContext): Promise<TranscodeResult> {
  validateJob(job);
  const { runner, signal } = ctx;
  const started = performance.now();
  const probe = await probeInput(runner, job.input, signal);
  const segmentSeconds = job.segmentSeconds ?? DEFAULT_SEGMENT_SECONDS;
  const renditions = planRenditions(probe, job);
  const { planned, ignored } = planDownloads(job.downloads, job.ladder, renditions);
  if (ignored.length > 0) ctx.logger({ event: 'transcode.downloads_ignored', transcoderId: ctx.transcoderId, ignored });

  const plan: EncodePlan = {
    renditions,
    hasVideo: probe.hasVideo,
    hasAudio: probe.hasAudio,
    segmentSeconds,
    frameRate: probe.frameRate,
    preset: ctx.preset,
  };
  const progress = createProgressTracker(probe.durationSeconds, planned.length > 0 ? [90, 10] : [100], ctx.onProgress);
  prepareOutDir(job.outDir, renditions, planned.length > 0);
  const paths = runner.toolPaths({ input: job.input, outDir: job.outDir });
  ctx.logger({
    event: 'transcode.started',
    transcoderId: ctx.transcoderId,
    backend: runner.backend,
    input: job.input,
    renditions: renditions.map((r) => r.name),
    downloads: planned.map((d) => `${d.rendition}:${d.format}`),
  });

  const hlsRun = await runner.run({
    tool: 'ffmpeg',
    args: buildHlsArgs(plan, paths),
    files: { input: job.input, outDir: job.outDir },
    onLine: (line) => progress.line(line),
    signal,
  });
  assertSucceeded(hlsRun, 'HLS encode');
  verifyHls(job.outDir, renditions);

  const files: PlannedDownloadFile[] = planned.map((d) => {
    const file = downloadFileName(d.rendition, d.format);
    return d.format === 'mp4-encrypted'
      ? { rendition: d.rendition, format: d.format, file, key: randomKeyHex(), kid: randomKeyHex() }
      : { rendition: d.rendition, format: d.format, file };
  });
  if (files.length > 0) {
    progress.phase(1);
    const dlRun = await runner.run({
      tool: 'ffmpeg',
      args: buildDownloadArgs(files, paths),
      files: { outDir: job.outDir },
      onLine: (line) => progress.line(line),
      signal,
    });
    assertSucceeded(dlRun, 'download remux');
  }

  const result = measure(job.outDir, probe, renditions, files);
  progress.finish();
  const seconds = (performance.now() - started) / 1000;
  ctx.logger({
    event: 'transcode.finished',
    transcoderId: ctx.transcoderId,
    backend: runner.backend,
    input: job.input,
    seconds: Math.round(seconds * 1000) / 1000,
    realtimeFactor: result.durationSeconds ? Math.round((result.durationSeconds / seconds) * 100) / 100 : null,
    hlsBytes: result.hlsBytes,
    downloadBytes: result.downloadBytes,
  });
  return result;
}

function validateJob(job: TranscodeJob): void {
  if (!path.isAbsolute(job.outDir)) throw new TranscodeError('INVALID_JOB', `outDir must be absolute: ${job.outDir}`);
  if (!fs.existsSync(job.outDir) || !fs.statSync(job.outDir).isDirectory())
    throw new TranscodeError('INVALID_JOB', `outDir does not exist: ${job.outDir}`);
  if (job.segmentSeconds !== undefined && !(job.segmentSeconds > 0))
    throw new TranscodeError('INVALID_JOB', 'segmentSeconds must be positive');
  for (const r of job.ladder) {
    // Rung names become directory names and var_stream_map tokens.
    if (!/^[A-Za-z0-9_-]+$/.test(r.name) || r.name === AUDIO_RENDITION)
      throw new TranscodeError('INVALID_JOB', `bad rung name: ${JSON.stringify(r.name)}`);
    if (!(r.height > 0 && r.videoBitrateKbps > 0 && r.audioBitrateKbps > 0))
      throw new TranscodeError('INVALID_JOB', `rung ${r.name} needs positive height and bitrates`);
  }
}

/** Video rungs with their sizes, or the single audio-only rendition. */
function planRenditions(probe: ProbeResult, job: TranscodeJob): PlannedRendition[] {
  if (probe.hasVideo) {
    if (job.ladder.length === 0) throw new TranscodeError('INVALID_JOB', 'ladder is empty');
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

function prepareOutDir(outDir: string, renditions: PlannedRendition[], withDownloads: boolean): void {
  // Only our own subdirectories are cleared, so a retried job never mixes in
  // segments from an earlier attempt.
  fs.rmSync(path.join(outDir, HLS_DIR), { recursive: true, force: true });
  fs.rmSync(path.join(outDir, DOWNLOADS_DIR), { recursive: true, force: true });
  for (const r of renditions) fs.mkdirSync(path.join(outDir, HLS_DIR, r.name), { recursive: true });
  if (withDownloads) fs.mkdirSync(path.join(outDir, DOWNLOADS_DIR), { recursive: true });
}

function assertSucceeded(run: RunOutcome, what: string): void {
  if (run.exitCode !== 0) throw classifyFfmpegFailure(run, what);
}

function verifyHls(outDir: string, renditions: PlannedRendition[]): void {
  const master = path.join(outDir, HLS_DIR, MASTER_PLAYLIST);
  if (!fs.existsSync(master)) throw new TranscodeError('FFMPEG_FAILED', 'ffmpeg wrote no master playlist');
  for (const r of renditions) {
    const media = path.join(outDir, mediaPlaylistPath(r.name));
    if (!fs.existsSync(media)) throw new TranscodeError('FFMPEG_FAILED', `ffmpeg wrote no playlist for ${r.name}`);
    if (parseMediaPlaylist(fs.readFileSync(media, 'utf8')).segments.length === 0)
      throw new TranscodeError('FFMPEG_FAILED', `playlist for ${r.name} has no segments`);
  }
  const variants = parseMasterPlaylist(fs.readFileSync(master, 'utf8'));
  if (variants.length !== renditions.length)
    throw new TranscodeError('FFMPEG_FAILED', `master playlist lists ${variants.length} variants, expected ${renditions.length}`);
}

function measure(
  outDir: string,
  probe: ProbeResult,
  renditions: PlannedRendition[],
  files: PlannedDownloadFile[],
): TranscodeResult {
  const out: Rendition[] = renditions.map((r) => {
    const dl = files.find((f) => f.rendition === r.name);
    return {
      quality: r.name,
      width: r.width,
      height: r.height,
      playlist: mediaPlaylistPath(r.name),
      download: dl
        ? {
            file: dl.file,
            format: dl.format,
            password: dl.format === 'mp4-encrypted' ? dl.key! : null,
            sizeBytes: fileSize(path.join(outDir, dl.file), dl.rendition),
          }
        : null,
    };
  });
  // Duration is measured from what was produced (the top rung's playlist),
  // which is what viewers get; the probe is only a fallback.
  const top = renditions.at(-1)!;
  const topPlaylist = parseMediaPlaylist(fs.readFileSync(path.join(outDir, mediaPlaylistPath(top.name)), 'utf8'));
  const measured = Math.round(topPlaylist.totalDuration * 1000) / 1000;
  return {
    masterPlaylist: path.posix.join(HLS_DIR, MASTER_PLAYLIST),
    renditions: out,
    durationSeconds: measured > 0 ? measured : probe.durationSeconds,
    hlsBytes: directoryBytes(path.join(outDir, HLS_DIR)),
    downloadBytes: out.reduce((sum, r) => sum + (r.download?.sizeBytes ?? 0), 0),
    probe,
  };
}

function fileSize(file: string, rendition: string): number {
  try {
    const size = fs.statSync(file).size;
    if (size > 0) return size;
  } catch {
    // fall through
  }
  throw new TranscodeError('FFMPEG_FAILED', `download for ${rendition} was not written`);
}
