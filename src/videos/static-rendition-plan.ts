import type { ProbeResult, Rung, StaticFile, StaticRenditionsRequest } from "../../media/transcoder/index.ts";
import { erroredStatic, type StaticRendition, type StaticRenditionErrorCode } from "../../machines/video-payload.ts";
import { STATIC_AUDIO_ONLY, STATIC_HIGHEST } from "../orgs/static-rendition-names.ts";

/** One static rendition asked for: the file the job makes for it (an MP4 of a rendition, the M4A), or why none. */
export type PlannedStatic = { name: string; make: { kind: "mp4"; rendition: string } | { kind: "m4a" } } | { name: string; error: StaticRenditionErrorCode };

/**
 * Issue 27 item 4, part of "plan outputs": each name asked for resolved against what this source produces
 * (`planned`, the ladder capped at the source): `highest` → the top rung, `audio-only` → the M4A, a rung
 * name → its MP4; or the reason it is not made (a DRM video, a rung the source is too small for or that
 * left the ladder, no video or no audio). The job's request holds each file once ("highest" and "720p" on a
 * 720p source are one MP4).
 */
export function planStatics(names: string[], probe: ProbeResult, ladder: Rung[], planned: Rung[], drm: boolean): { request: StaticRenditionsRequest; entries: PlannedStatic[] } {
  const entries = names.map((name): PlannedStatic => {
    if (drm) return { name, error: "DRM_PROTECTED" };
    if (name === STATIC_AUDIO_ONLY) return probe.hasAudio ? { name, make: { kind: "m4a" } } : { name, error: "NO_AUDIO" };
    if (!probe.hasVideo) return { name, error: "NO_VIDEO" };
    if (name === STATIC_HIGHEST) return { name, make: { kind: "mp4", rendition: planned.at(-1)!.name } };
    if (!ladder.some((r) => r.name === name)) return { name, error: "NOT_IN_LADDER" };
    return planned.some((r) => r.name === name) ? { name, make: { kind: "mp4", rendition: name } } : { name, error: "SOURCE_TOO_SMALL" };
  });
  const mp4: string[] = [];
  for (const e of entries) if ("make" in e && e.make.kind === "mp4" && !mp4.includes(e.make.rendition)) mp4.push(e.make.rendition);
  return { request: { mp4, m4a: entries.some((e) => "make" in e && e.make.kind === "m4a") }, entries };
}

/** Part of "outcome": each planned entry as the payload lists it, ready with the stored file's URL and size. */
export function staticOutcome(entries: PlannedStatic[], files: StaticFile[], url: (file: string) => string): StaticRendition[] {
  return entries.map((e) => {
    if ("error" in e) return erroredStatic(e.name, e.error);
    const make = e.make;
    const file = files.find((f) => f.kind === make.kind && (make.kind === "m4a" || f.rendition === make.rendition));
    // Asked for and not written: the job fails instead (media/transcoder/copy-outputs.ts), so this is not reached.
    if (!file) return erroredStatic(e.name, "TRANSCODE_FAILED");
    return { name: e.name, url: url(file.file), status: "ready", bytes: String(file.sizeBytes), error: null };
  });
}
