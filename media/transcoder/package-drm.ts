/**
 * The DRM step of a job: the renditions' intermediate MP4s → encrypted DASH
 * under dash/ (media/drm), with media/drm's errors turned into the
 * transcoder's. Shaka Packager is a native binary from npm, so both backends
 * run it the same way, as a child process that dies with this one.
 */
import * as path from "node:path";
import { checkDrmKey, type DrmKey } from "../drm/drm-key.ts";
import { InvalidDrmKeyError, PackagerUnavailableError, PackagingFailedError } from "../drm/errors.ts";
import { packageDash, type PackagedDash } from "../drm/package-dash.ts";
import { packagerBinary } from "../drm/packager-binary.ts";
import { abortReason } from "./abort-reason.ts";
import { DASH_DIR, scratchMp4Path, type PlannedRendition } from "./build-ffmpeg-args.ts";
import { withParentDeathSignal } from "./child-processes.ts";
import { TranscodeError } from "./transcode-error.ts";

/** A job's key, checked before anything runs (INVALID_JOB), and the packager, found before anything is encoded (PACKAGER_UNAVAILABLE). */
export function prepareDrm(drm: DrmKey, findBinary: () => string = packagerBinary): { drm: DrmKey; packager: string } {
  let key: DrmKey;
  try {
    key = checkDrmKey(drm);
  } catch (e) {
    if (e instanceof InvalidDrmKeyError) throw new TranscodeError("INVALID_JOB", e.message);
    throw e;
  }
  try {
    return { drm: key, packager: findBinary() };
  } catch (e) {
    if (e instanceof PackagerUnavailableError) throw new TranscodeError("PACKAGER_UNAVAILABLE", e.message);
    throw e;
  }
}

export async function packageRenditions(opts: {
  outDir: string;
  mp4Dir: string;
  renditions: PlannedRendition[];
  hasVideo: boolean;
  hasAudio: boolean;
  drm: DrmKey;
  packager: string;
  segmentSeconds: number;
  signal: AbortSignal;
}): Promise<PackagedDash> {
  try {
    return await packageDash({
      inputs: opts.renditions.map((r) => ({
        name: r.name,
        file: path.join(opts.outDir, scratchMp4Path(opts.mp4Dir, r.name)),
        video: opts.hasVideo && r.height > 0,
        audio: opts.hasAudio,
      })),
      outDir: path.join(opts.outDir, DASH_DIR),
      drm: opts.drm,
      segmentSeconds: opts.segmentSeconds,
      signal: opts.signal,
      packager: opts.packager,
      wrapArgv: (argv) => withParentDeathSignal(argv),
    });
  } catch (e) {
    if (opts.signal.aborted) throw abortReason(opts.signal);
    if (e instanceof PackagingFailedError) throw new TranscodeError("PACKAGING_FAILED", e.message, e.logTail);
    if (e instanceof PackagerUnavailableError) throw new TranscodeError("PACKAGER_UNAVAILABLE", e.message);
    throw e;
  }
}
