/**
 * Issue 27 item 4: what a job's copy run makes besides its downloads (no second encode): static renditions
 * (an MP4 of a rung with `faststart`, an M4A of the audio) and the HLS master's audio-only variant. The
 * command line is built with the others (build-ffmpeg-args.ts `buildCopyArgs`); this file plans them,
 * merges the variant into the master and measures the files.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  AUDIO_VARIANT,
  HLS_DIR,
  MASTER_PLAYLIST,
  MEDIA_PLAYLIST,
  mediaPlaylistPath,
  partialMasterName,
  staticFileName,
  type CopyExtras,
  type PlannedRendition,
  type PlannedStaticFile,
} from "./build-ffmpeg-args.ts";
import { parseMediaPlaylist } from "./hls-playlist.ts";
import { TranscodeError } from "./transcode-error.ts";
import type { ProbeResult, StaticFile, StaticRenditionsRequest } from "./types.ts";

/**
 * The static files and the audio variant a job asked for, checked against what it produces: an MP4 names a
 * produced video rendition, an M4A needs audio (taken from the top rendition: the best audio), and a DRM
 * job makes neither (it writes no clear media, issue 23). The audio variant needs video and audio (an
 * audio-only source's master is audio only already) and HLS (not a DRM job's DASH); it copies the cheapest
 * rendition's audio, since it is for a weak link.
 */
export function planCopyExtras(job: { staticRenditions?: StaticRenditionsRequest; audioVariant?: boolean }, renditions: PlannedRendition[], probe: ProbeResult, drm: boolean): CopyExtras {
  const req = job.staticRenditions ?? { mp4: [], m4a: false };
  if (drm && (req.mp4.length > 0 || req.m4a)) throw new TranscodeError("INVALID_JOB", "a DRM job writes no clear media: no static renditions");
  const video = renditions.filter((r) => probe.hasVideo && r.height > 0);
  const statics: PlannedStaticFile[] = [];
  for (const name of new Set(req.mp4)) {
    if (!video.some((r) => r.name === name)) throw new TranscodeError("INVALID_JOB", `static rendition ${JSON.stringify(name)} names no produced video rendition`);
    statics.push({ rendition: name, kind: "mp4", file: staticFileName(name, "mp4") });
  }
  if (req.m4a) {
    if (!probe.hasAudio) throw new TranscodeError("INVALID_JOB", "an M4A needs a source with audio");
    statics.push({ rendition: renditions.at(-1)!.name, kind: "m4a", file: staticFileName("", "m4a") });
  }
  const variant = job.audioVariant && !drm && probe.hasAudio && video.length > 0 ? { rendition: video[0]!.name } : null;
  return { statics, audioVariant: variant };
}

/**
 * After the copy run: the audio variant's entry appended to `master.m3u8` as its last variant, after checking
 * its playlist has segments. ffmpeg's HLS muxer drops a copied stream's variant from the master it writes
 * (it knows no bitrate for it), so the entry is written here: `BANDWIDTH` the peak segment bitrate measured
 * from the files (what HLS asks for), `CODECS` the audio's alone (the ladder's AAC-LC encoder).
 */
export function mergeAudioVariant(outDir: string): void {
  const hls = path.join(outDir, HLS_DIR);
  fs.rmSync(path.join(hls, partialMasterName(AUDIO_VARIANT)), { force: true });
  const playlist = path.join(outDir, mediaPlaylistPath(AUDIO_VARIANT));
  if (!fs.existsSync(playlist)) throw new TranscodeError("FFMPEG_FAILED", "ffmpeg wrote no audio-only variant");
  const { segments } = parseMediaPlaylist(fs.readFileSync(playlist, "utf8"));
  if (segments.length === 0) throw new TranscodeError("FFMPEG_FAILED", "the audio-only variant has no segments");
  const dir = path.dirname(playlist);
  const peak = Math.max(...segments.map((s) => (fs.statSync(path.join(dir, s.uri)).size * 8) / Math.max(s.duration, 0.1)));
  const master = path.join(hls, MASTER_PLAYLIST);
  const text = fs.readFileSync(master, "utf8");
  const entry = `#EXT-X-STREAM-INF:BANDWIDTH=${Math.ceil(peak)},CODECS="mp4a.40.2"\n${AUDIO_VARIANT}/${MEDIA_PLAYLIST}\n`;
  fs.writeFileSync(`${master}.tmp`, `${text.endsWith("\n") ? text : `${text}\n`}${entry}`);
  fs.renameSync(`${master}.tmp`, master);
}

/** The static files as written, with their sizes (a missing or empty one fails the job: it was asked for). */
export function measureStatics(outDir: string, statics: PlannedStaticFile[]): StaticFile[] {
  return statics.map((s) => {
    const size = fs.statSync(path.join(outDir, s.file), { throwIfNoEntry: false })?.size ?? 0;
    if (!(size > 0)) throw new TranscodeError("FFMPEG_FAILED", `static rendition ${s.file} was not written`);
    return { rendition: s.rendition, kind: s.kind, file: s.file, sizeBytes: size };
  });
}
