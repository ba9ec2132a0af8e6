import { isTranscodeError, planLadder, type ProbeResult, type Transcoder } from "../../media/transcoder/index.ts";
import { defaultOrgSettings, type OrgSettings } from "../orgs/org-settings.ts";
import { PermanentWorkError } from "../work/work-runner.ts";
import { planStatics } from "./static-rendition-plan.ts";
import { permanentFailure, UNREADABLE_SOURCE, videoFailure } from "./video-failure.ts";

/** Probes the source; a source that cannot be read, or has neither audio nor video, fails the video for good. */
export async function probeSource(transcoder: Transcoder, source: string, signal: AbortSignal): Promise<ProbeResult> {
  let probe: ProbeResult;
  try {
    probe = await transcoder.probe(source, { signal });
  } catch (err) {
    if (isTranscodeError(err, "CANCELLED")) throw err;
    // In the user's terms; ffprobe's own words stay in the error's cause (logged by the runner).
    const f = videoFailure(err);
    throw permanentFailure("INPUT_UNSUPPORTED", f.code === "INPUT_UNSUPPORTED" ? f.message : UNREADABLE_SOURCE, err);
  }
  if (!probe.hasVideo && !probe.hasAudio) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The source has no audio or video stream.");
  return probe;
}

export type OutputPlan = ReturnType<typeof planOutputs>;

/**
 * Step 2 of a transcode, "plan outputs": the organization's ladder (the default one without settings) and the
 * downloads it asks for, limited to the rungs the source can fill (`top` is the highest planned), each once;
 * the static renditions the video asked for (absent: the organization's default; static-rendition-plan.ts).
 */
export function planOutputs(probe: ProbeResult, settings: OrgSettings | null, video: { staticRenditions?: string[]; drm: boolean } = { drm: false }) {
  const s = settings ?? defaultOrgSettings();
  const ladder = s.transcoding?.ladder ?? defaultOrgSettings().transcoding!.ladder;
  const planned = planLadder(probe, ladder);
  const top = planned.at(-1)?.name;
  const downloads = s.downloads.rungs
    .map((r) => (r === "top" ? top : r))
    .filter((r, i, all): r is string => !!r && planned.some((p) => p.name === r) && all.indexOf(r) === i)
    .map((rung) => ({ rung, format: s.downloads.format }));
  const statics = planStatics(video.staticRenditions ?? s.staticRenditions, probe, ladder, planned, video.drm);
  return { ladder, downloads, statics };
}
