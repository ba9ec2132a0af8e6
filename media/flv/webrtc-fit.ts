import { parseAvcDecoderConfig } from "./avc.ts";
import type { FlvTag } from "./flv-tag.ts";
import { parseSps } from "./sps.ts";

/**
 * Why an H.264 stream cannot go to WebRTC viewers as sent:
 * - `B_FRAMES`: frames are reordered (a composition time offset ≠ 0). RTP has
 *   no decode timestamp and libwebrtc's frame buffer drops every frame whose
 *   timestamp is older than one already decoded, so a browser shows about
 *   one picture per keyframe.
 * - `FORMAT`: not 8-bit 4:2:0 (High 10, 4:2:2, 4:4:4), which WebRTC's
 *   software H.264 decoders do not take.
 * - `INTERLACED`: field or MBAFF coding (frame_mbs_only_flag 0).
 */
export type WebrtcUnfitReason = "B_FRAMES" | "FORMAT" | "INTERLACED";

export interface WebrtcUnfit {
  reason: WebrtcUnfitReason;
  /** For people: what was seen in the stream. */
  message: string;
}

export interface WebrtcFit {
  /** Whether the stream has told enough: a sequence header and a first picture (or a baseline SPS, which cannot reorder). */
  decided: boolean;
  /** Null while the H.264 can go to WebRTC as is (or nothing is known yet). */
  unfit: WebrtcUnfit | null;
}

const sameBytes = (a: Uint8Array | null, b: Uint8Array) => a !== null && a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Watches an FLV stream's video tags (cheap: a few header bytes per tag; the
 * SPS parsed once per sequence header) and tells whether WebRTC viewers can
 * get its H.264 as is. Reordering is read from the composition time offsets
 * the encoder put in the tags, not guessed from the profile: High profile
 * without B-frames (x264 zerolatency, OBS with B-frames 0) passes, and an
 * encoder with B-frames shows them on its first keyframe (pts > dts). Once
 * seen, reordering stays until a different sequence header (a new encoder
 * configuration) arrives.
 */
export function createWebrtcFitCheck() {
  let record: Uint8Array | null = null;
  let format: WebrtcUnfit | null = null;
  let cannotReorder = false;
  let pictures = 0;
  let reorder: WebrtcUnfit | null = null;

  function sequenceHeader(avcC: Uint8Array) {
    if (sameBytes(record, avcC)) return;
    record = avcC.slice();
    format = null;
    cannotReorder = false;
    pictures = 0;
    reorder = null;
    try {
      const sps = parseSps(parseAvcDecoderConfig(avcC).sps[0]!);
      if (sps.chromaFormatIdc !== 1 || sps.bitDepthLuma !== 8 || sps.bitDepthChroma !== 8) {
        format = { reason: "FORMAT", message: `H.264 ${sps.profile} (${sps.bitDepthLuma}-bit, chroma format ${sps.chromaFormatIdc}): WebRTC decoders take 8-bit 4:2:0` };
      } else if (!sps.frameMbsOnly) {
        format = { reason: "INTERLACED", message: `H.264 ${sps.profile} is interlaced: WebRTC decoders take progressive pictures` };
      }
      // Baseline (66) and constrained profiles have no B slices; constraint_set1 (0x40) marks constrained baseline.
      cannotReorder = sps.profileIdc === 66 || (sps.constraintFlags & 0x40) !== 0;
    } catch {
      // An SPS we cannot read says nothing; the pictures still tell about reordering.
    }
  }

  return {
    observe(tag: FlvTag): void {
      if (tag.type !== "video") return;
      const p = tag.payload;
      // Only legacy FLV H.264 (CodecID 7): anything else is refused by the ingest anyway.
      if (p.length < 5 || p[0]! & 0x80 || (p[0]! & 0x0f) !== 7 || p[0]! >> 4 === 5) return;
      if (p[1] === 0) return sequenceHeader(p.subarray(5));
      if (p[1] !== 1) return;
      pictures++;
      if (reorder) return;
      const cts = ((p[2]! << 24) | (p[3]! << 16) | (p[4]! << 8)) >> 8;
      if (cts !== 0) reorder = { reason: "B_FRAMES", message: `the encoder sends B-frames (pictures out of order: composition offset ${cts} ms)` };
    },
    verdict(): WebrtcFit {
      const unfit = format ?? reorder;
      return { decided: unfit !== null || cannotReorder || pictures > 0, unfit };
    },
  };
}

export type WebrtcFitCheck = ReturnType<typeof createWebrtcFitCheck>;
