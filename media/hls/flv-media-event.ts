import { parseFlvAudioTag } from "../flv/aac.ts";
import { parseFlvVideoTag } from "../flv/avc.ts";
import type { FlvTag } from "../flv/flv-tag.ts";

/** One FLV tag as the packager sees it. Timestamps stay in FLV milliseconds. */
export type FlvMediaEvent =
  | { kind: "video-config"; record: Uint8Array }
  | { kind: "audio-config"; asc: Uint8Array }
  | { kind: "video"; data: Uint8Array; isKeyframe: boolean; dtsMs: number; ptsMs: number }
  | { kind: "audio"; data: Uint8Array; dtsMs: number }
  | { kind: "ignored"; reason: string };

/**
 * Classifies a tag. Throws the flv parsers' named errors (unsupported codec,
 * malformed body); the caller decides whether that is fatal. Payload views are
 * not copied here.
 */
export function flvMediaEvent(tag: FlvTag): FlvMediaEvent {
  if (tag.type === "data") return { kind: "ignored", reason: "script data" };
  if (tag.type === "video") {
    const v = parseFlvVideoTag(tag.payload);
    switch (v.avcPacketType) {
      case "sequence-header":
        return { kind: "video-config", record: v.data };
      case "nalu":
        if (v.data.length === 0) return { kind: "ignored", reason: "empty video packet" };
        return {
          kind: "video",
          data: v.data,
          // Frame type 4 ("generated keyframe", used by servers for seeking) is not an IDR.
          isKeyframe: v.isKeyframe,
          dtsMs: tag.timestamp,
          ptsMs: tag.timestamp + v.compositionTimeMs,
        };
      default:
        return { kind: "ignored", reason: v.avcPacketType === null ? "video command frame" : "AVC end of sequence" };
    }
  }
  const a = parseFlvAudioTag(tag.payload);
  if (a.aacPacketType === "sequence-header") return { kind: "audio-config", asc: a.data };
  if (a.data.length === 0) return { kind: "ignored", reason: "empty audio packet" };
  return { kind: "audio", data: a.data, dtsMs: tag.timestamp };
}
