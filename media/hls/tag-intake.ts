import type { FlvTag } from "../flv/flv-tag.ts";
import { flvMediaEvent } from "./flv-media-event.ts";
import type { LiveTracks, MediaEvent, WarnOnce } from "./live-tracks.ts";

/**
 * One FLV tag into a live packager's tracks (both packagers): a sequence
 * header updates them ("config"), a media frame comes back copied (RTMP
 * servers reuse buffers; packagers hold frames until their file is written)
 * with its arrival time, anything else is null (an unusable tag is warned
 * about once per kind).
 */
export function takeTag(tag: FlvTag, arrivalMs: number, tracks: LiveTracks, warnOnce: WarnOnce): MediaEvent | "config" | null {
  let ev: ReturnType<typeof flvMediaEvent>;
  try {
    ev = flvMediaEvent(tag);
  } catch (err) {
    const name = err instanceof Error ? err.name : "Error";
    warnOnce(`tag-${name}`, `${tag.type} tag not usable, dropped (further ones are dropped silently)`, { error: String(err) });
    return null;
  }
  switch (ev.kind) {
    case "ignored":
      return null;
    case "video-config":
      tracks.onVideoConfig(ev.record);
      return "config";
    case "audio-config":
      tracks.onAudioConfig(ev.asc);
      return "config";
    default:
      return { ...ev, data: ev.data.slice(), arrivalMs };
  }
}
