import type { Rendition, TranscodeOutcome } from "../../machines/video-payload.ts";
import type { TranscodeResult } from "../../media/transcoder/index.ts";
import { type PlannedStatic, staticOutcome } from "./static-rendition-plan.ts";
import { SUMMARY_FILE, TRANSCRIPT_FILE } from "./transcript-outputs.ts";

export interface OutcomeInput {
  /** The served URL of a file of the video's tree (MediaStore.url bound to the video). */
  url: (file: string) => string;
  watchUrl: string;
  result: TranscodeResult;
  sourceBytes: number;
  transcriptBytes: number | null;
  /** The static renditions asked for (plan outputs), each made or with the reason it was not. */
  statics?: PlannedStatic[];
  /** A DRM run: the key id and the licence URL with a token minted now (GET answers a fresh one each time). */
  drm: { contentId: string; licenseUrl: string } | null;
}

/**
 * Spec 2.6: "hls and original on a normal run, drm on a DRM run"; `transcript_bytes` (issue 12) and
 * `static_rendition_bytes` (issue 27 item 4: each file once), counted in total_bytes, when written.
 */
function storageOf(i: OutcomeInput): Record<string, string> {
  const { result, sourceBytes, transcriptBytes } = i;
  const staticBytes = (result.staticFiles ?? []).reduce((sum, f) => sum + f.sizeBytes, 0);
  const served = i.drm ? { drm_bytes: result.drmBytes ?? 0 } : { hls_bytes: result.hlsBytes };
  const servedBytes = i.drm ? (result.drmBytes ?? 0) : result.hlsBytes;
  return {
    total_bytes: String(servedBytes + result.downloadBytes + sourceBytes + (transcriptBytes ?? 0) + staticBytes),
    ...Object.fromEntries(Object.entries(served).map(([k, v]) => [k, String(v)])),
    download_bytes: String(result.downloadBytes),
    original_bytes: String(sourceBytes),
    ...(transcriptBytes !== null ? { transcript_bytes: String(transcriptBytes) } : {}),
    ...(result.staticFiles?.length ? { static_rendition_bytes: String(staticBytes) } : {}),
  };
}

/** Step 5 of a transcode, "outcome": what TRANSCODING_COMPLETED carries, from what was stored. Pure. */
export function transcodeOutcome(i: OutcomeInput): TranscodeOutcome {
  const { result, url } = i;
  const renditions: Rendition[] = result.renditions.map((r) => ({
    quality: r.quality,
    url: url(r.playlist),
    width: r.width,
    height: r.height,
    download_url: r.download ? url(r.download.file) : null,
    download_size_bytes: r.download ? String(r.download.sizeBytes) : null,
    download_password: r.download?.password ?? null,
  }));
  return {
    url: result.masterPlaylist ? url(result.masterPlaylist) : null,
    durationSeconds: result.durationSeconds === null ? null : Math.round(result.durationSeconds),
    sizeBytes: i.sourceBytes,
    renditions,
    storage: storageOf(i),
    ...(i.transcriptBytes !== null ? { transcript: { url: url(TRANSCRIPT_FILE), summaryUrl: url(SUMMARY_FILE) } } : {}),
    ...(result.posters ? { posters: { thumbnailUrl: url(result.posters.thumbnail), storyboardUrl: url(result.posters.storyboard) } } : {}),
    watchUrl: i.watchUrl,
    ...(i.drm ? { drm: i.drm } : {}),
    ...(i.statics ? { staticRenditions: staticOutcome(i.statics, result.staticFiles ?? [], url) } : {}),
  };
}
