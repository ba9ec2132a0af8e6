import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { buildWebVtt, extractSpeechAudio, firstSegmentPts, segmentWebVtt, summarize } from "../../media/stt/index.ts";
import type { Transcriber, Word } from "../../media/stt/types.ts";
import { addSubtitlesToMaster, addTextAdaptationSet } from "./subtitle-manifests.ts";

/** Where a video's transcript lives under its media dir (`media/<token>/`, served like the ladder). */
export const TRANSCRIPT_FILE = "transcript.vtt";
export const SUMMARY_FILE = "summary.txt";
/** The segmented WebVTT rendition, beside the ladder's rungs under `hls/`. */
export const SUBTITLES_PLAYLIST = "hls/subs/en/index.m3u8";
/** Seconds per subtitle segment: the transcoder's HLS segment length (media/transcoder, `segmentSeconds` default 4), so they cut at the same instants. */
const SUBTITLE_SEGMENT_SECONDS = 4;

export type TranscriptionResult = { ok: true; words: Word[]; ms: number } | { ok: false; error: unknown };

/**
 * Extracts the speech track (16 kHz mono WAV in `workDir`) and transcribes
 * it, in the background: the transcode handler starts this beside the encode
 * and awaits it after. Never rejects (a failure is a result: the video
 * completes without a transcript). Cancelled by `signal` (the job's) or by
 * `cancel()` (the encode failed: nobody will wait for the words).
 */
export function startTranscription(opts: { transcriber: Transcriber; input: string; workDir: string; signal: AbortSignal; timeoutMs: number }): {
  result: Promise<TranscriptionResult>;
  cancel: () => void;
} {
  const local = new AbortController();
  // TRANSCODE_TIMEOUT_MS bounds it as it bounds the encode: a stuck engine cannot hold COMPLETED forever.
  const signal = AbortSignal.any([opts.signal, local.signal, AbortSignal.timeout(opts.timeoutMs)]);
  const started = performance.now();
  const result = (async (): Promise<TranscriptionResult> => {
    const wav = join(opts.workDir, "speech.wav");
    await extractSpeechAudio(opts.input, wav, { signal });
    const words = await opts.transcriber.transcribe(wav, { signal });
    return { ok: true, words, ms: performance.now() - started };
  })().catch((error: unknown) => ({ ok: false as const, error }));
  return { result, cancel: () => local.abort(new Error("The encode failed; transcription cancelled.")) };
}

/**
 * Writes the transcript beside the ladder in `outDir` (the media dir, or its
 * scratch copy before `putDir` with STORAGE=s3): `transcript.vtt`,
 * `summary.txt`, and the player's view of it. HLS (`manifest` ends in
 * `.m3u8`): the segmented rendition `hls/subs/en/` and its line in the
 * master. DASH (a DRM video, `.mpd`): a text AdaptationSet naming the whole
 * `transcript.vtt`. Returns the bytes written (storage `transcript_bytes`).
 */
export async function writeTranscriptOutputs(opts: {
  outDir: string;
  words: Word[];
  durationSeconds: number;
  title: string;
  /** The job's manifest, relative to outDir: `hls/master.m3u8` or `dash/manifest.mpd`. */
  manifest: string;
}): Promise<{ bytes: number }> {
  const { outDir } = opts;
  let bytes = 0;
  const put = async (rel: string, text: string) => {
    const path = join(outDir, rel);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
    bytes += Buffer.byteLength(text);
  };
  const vtt = buildWebVtt(opts.words, { durationSeconds: opts.durationSeconds });
  await put(TRANSCRIPT_FILE, vtt);
  const transcript = opts.words.map((w) => w.text).join(" ");
  await put(SUMMARY_FILE, `${summarize(transcript, opts.title).trim()}\n`);

  const manifestPath = join(outDir, opts.manifest);
  if (opts.manifest.endsWith(".m3u8")) {
    const master = await readFile(manifestPath, "utf8");
    // X-TIMESTAMP-MAP: cue time 0 is the first PTS of the ladder's first segment (ffmpeg's mpegts offset), so
    // hls.js and Safari line the captions up with the video; media/stt's default when it cannot be read.
    const mpegts = await firstLadderPts(dirname(manifestPath), master);
    const { playlist, segments } = segmentWebVtt(vtt, SUBTITLE_SEGMENT_SECONDS, opts.durationSeconds, mpegts === null ? {} : { mpegts });
    const dir = dirname(SUBTITLES_PLAYLIST);
    for (const s of segments) await put(join(dir, s.name), s.text);
    await put(SUBTITLES_PLAYLIST, playlist);
    const uri = SUBTITLES_PLAYLIST.slice(dirname(opts.manifest).length + 1);
    // The master is rewritten in place; its own size is counted in hls_bytes already (a few dozen bytes more now).
    await writeFile(manifestPath, addSubtitlesToMaster(master, { uri, language: "en", name: "English" }));
  } else if (opts.manifest.endsWith(".mpd")) {
    const baseUrl = `${"../".repeat(opts.manifest.split("/").length - 1)}${TRANSCRIPT_FILE}`;
    await writeFile(manifestPath, addTextAdaptationSet(await readFile(manifestPath, "utf8"), { baseUrl, language: "en" }));
  }
  return { bytes };
}

/** The first PTS (90 kHz) of the first segment of the master's first variant, or null. */
async function firstLadderPts(hlsDir: string, master: string): Promise<number | null> {
  const lines = master.split(/\r?\n/);
  const variant = lines[lines.findIndex((l) => l.startsWith("#EXT-X-STREAM-INF:")) + 1]?.trim();
  if (!variant || variant.startsWith("#")) return null;
  const playlistPath = join(hlsDir, variant);
  const media = await readFile(playlistPath, "utf8").catch(() => "");
  const segment = media.split(/\r?\n/).find((l) => l.trim() && !l.startsWith("#"));
  return segment ? firstSegmentPts(join(dirname(playlistPath), segment.trim())) : null;
}
