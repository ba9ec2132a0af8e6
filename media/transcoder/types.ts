/** Public shapes of the transcoder. See README.md for the decisions behind them. */

export type Backend = "wasm" | "native";

export interface Rung {
  /** Quality label, e.g. '360p'; becomes the rendition's directory name. */
  name: string;
  height: number;
  videoBitrateKbps: number;
  audioBitrateKbps: number;
}

export type DownloadFormat = "mkv" | "mp4-encrypted";

export interface DownloadSpec {
  /** Rung name the download is made from. */
  rung: string;
  format: DownloadFormat;
}

/** Issue 27 item 4: progressive files made from a job's renditions by stream copy (copy-outputs.ts). */
export interface StaticRenditionsRequest {
  /** Produced video renditions, each copied into `static/<rung>.mp4` (H.264/AAC, `faststart`). */
  mp4: string[];
  /** The top rendition's audio copied into `static/audio.m4a`. */
  m4a: boolean;
}

/** A static rendition a job wrote. */
export interface StaticFile {
  /** The rendition copied (for the M4A: the one whose audio it is). */
  rendition: string;
  kind: "mp4" | "m4a";
  /** Relative to outDir. */
  file: string;
  sizeBytes: number;
}

export interface ProbeResult {
  durationSeconds: number | null;
  /** Display width (rotation and sample aspect ratio applied). */
  width: number | null;
  /** Display height (rotation applied). */
  height: number | null;
  hasVideo: boolean;
  hasAudio: boolean;
  videoCodec: string | null;
  audioCodec: string | null;
  formatName: string | null;
  /** Average frame rate of the first video stream, used to size the GOP. */
  frameRate: number | null;
  /** Sample rate of the first audio stream (the AAC encoder keeps it): the chunked layout shifts its separately encoded audio by the encoder's 1024-sample priming. */
  audioSampleRate?: number | null;
}

export interface TranscodeJob {
  /** Absolute path of the source file. */
  input: string;
  /** Absolute, existing directory; outputs go under hls/ and downloads/. */
  outDir: string;
  ladder: Rung[];
  downloads: DownloadSpec[];
  /** Target HLS segment length; keyframes are forced on these boundaries. Default 4. */
  segmentSeconds?: number;
  /**
   * DRM: the rungs are encoded as usual, then packaged and encrypted by Shaka
   * Packager into DASH with CENC (`cenc` scheme, W3C common-system PSSH)
   * under `dash/` instead of HLS: `dash/manifest.mpd` (every rendition) and
   * `dash/<rung>.mpd` (that rendition alone). Key id and key: 32 hex digits each.
   */
  drm?: { keyId: string; key: string };
  /**
   * Also write `thumbnail.jpg` (a frame at 10 % of the duration, at most
   * 1280 wide), `sprite.jpg` (160 px tiles, one every ceil(duration/100) s)
   * and `storyboard.vtt` (cues `sprite.jpg#xywh=x,y,w,h`) into outDir, from
   * the cheapest rendition's run. Sources without video get none.
   */
  posters?: boolean;
  /** Static renditions (copy-outputs.ts); a DRM job refuses them (INVALID_JOB: it writes no clear media). */
  staticRenditions?: StaticRenditionsRequest;
  /**
   * Also give the HLS master an audio-only variant, listed last (`hls/audio-only/index.m3u8`, the cheapest
   * rendition's audio copied, `CODECS` of the audio only), so a player can fall back to audio on a weak
   * link. Only for a source with video and audio, and not for a DRM job (DASH).
   */
  audioVariant?: boolean;
}

/** Poster files of a job (`TranscodeJob.posters`), relative to outDir. */
export interface PosterFiles {
  thumbnail: string;
  sprite: string;
  storyboard: string;
  thumbnailWidth: number;
  thumbnailHeight: number;
  /** Bytes of the three files. */
  bytes: number;
}

export interface RenditionDownload {
  /** Path relative to outDir. */
  file: string;
  format: DownloadFormat;
  /** 32 lowercase hex digits (the CENC key) for 'mp4-encrypted', else null. */
  password: string | null;
  sizeBytes: number;
}

export interface Rendition {
  /** Rung name, or 'audio' for the audio-only rendition. */
  quality: string;
  /** 0 for the audio-only rendition. */
  width: number;
  /** 0 for the audio-only rendition. */
  height: number;
  /** Media playlist (or, for a DRM job, the rendition's own .mpd), relative to outDir. */
  playlist: string;
  download: RenditionDownload | null;
}

export interface TranscodeResult {
  /** Relative to outDir, e.g. 'hls/master.m3u8' (or 'dash/manifest.mpd' for a DRM job). */
  masterPlaylist: string;
  renditions: Rendition[];
  /** Measured from the produced playlists; falls back to the probe. */
  durationSeconds: number | null;
  /** Bytes of everything under hls/ (0 for a DRM job). */
  hlsBytes: number;
  /** Bytes of everything under dash/ (the encrypted DASH of a DRM job; 0 otherwise). */
  drmBytes: number;
  /** Wall time of the packaging step of a DRM job (0 otherwise), for bench/transcode.ts. */
  packagingMs: number;
  /** Bytes of all download files. */
  downloadBytes: number;
  probe: ProbeResult;
  /** The static renditions written (absent or empty: none asked). */
  staticFiles?: StaticFile[];
  /** Set when the job asked for posters and they were made; null/absent otherwise. */
  posters?: PosterFiles | null;
}

export interface ProbeOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface TranscodeOptions {
  /** 0..100, monotonic, ends with exactly 100 on success. */
  onProgress?: (percent: number) => void;
  signal?: AbortSignal;
  /** Hard limit for the whole job, counted from when it starts running (not while queued). */
  timeoutMs?: number;
  /**
   * Issue 29 item 1 (early-hls.ts): called while the ladder's HLS is written, each time a rendition's EVENT
   * playlist grew (awaited: growths arrive in order). `master` is set from the first playable moment on
   * (every rung kept ahead by the 1.5x rule; the master playlist is written then). Not called for DRM jobs.
   */
  onOutputs?: (snapshot: HlsSnapshot) => Promise<void> | void;
}

/** One rendition's growing media playlist: its path and text, the segments it lists (paths relative to outDir), their seconds. */
export interface HlsSnapshotPlaylist {
  file: string;
  text: string;
  segments: string[];
  seconds: number;
}

/** The HLS written so far (paths relative to outDir); every segment listed is complete on disk. */
export interface HlsSnapshot {
  playlists: HlsSnapshotPlaylist[];
  /** `hls/master.m3u8` once the ladder is playable, else null. */
  master: string | null;
}

/** A frame-accurate cut of a source (a clip's, issue 27): `[start, end)` seconds of `input` into `outDir/cut.mkv`. */
export interface CutJob {
  /** Absolute path of the source file. */
  input: string;
  /** Absolute, existing directory (not the input's own). */
  outDir: string;
  start: number;
  end: number;
}

export interface Transcoder {
  readonly backend: Backend;
  /** Stable per instance, e.g. 'wasm-host1-4242-1'; recorded as video.transcoder_id. */
  readonly id: string;
  probe(input: string, opts?: ProbeOptions): Promise<ProbeResult>;
  transcode(job: TranscodeJob, opts?: TranscodeOptions): Promise<TranscodeResult>;
  /** Cuts `[start, end)` losslessly re-encoded (cut-input.ts); answers the cut file's path. */
  cut(job: CutJob, opts?: ProbeOptions): Promise<string>;
  close(): Promise<void>;
}

export type TranscoderLogger = (obj: Record<string, unknown>) => void;

export interface CreateTranscoderOptions {
  /** 'auto' (default) prefers native when ffmpeg and ffprobe are on PATH. */
  backend?: "auto" | Backend;
  /** wasm pool size; default navigator.hardwareConcurrency. */
  workers?: number;
  logger?: TranscoderLogger;
  /** x264 preset; default 'veryfast'. */
  preset?: string;
  /**
   * Native backend: a directory where each running ffmpeg/ffprobe is recorded,
   * so `reapOrphans(dir)` at the next start kills those a killed process left
   * behind (children are also spawned to die with their parent when setpriv
   * is on PATH).
   */
  childPidDir?: string;
}
