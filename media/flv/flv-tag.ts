/**
 * The unit both the RTMP server and FLV files speak: one tag, whose payload is
 * exactly an FLV tag body (the RTMP message body for audio/video/data messages).
 */
export type FlvTagType = "audio" | "video" | "data";

export interface FlvTag {
  type: FlvTagType;
  /** Decode-order timestamp in milliseconds (32-bit, FLV's extended timestamp included). */
  timestamp: number;
  /** The tag body. Readers may hand out views into a larger buffer: copy it if you keep it past the next read. */
  payload: Uint8Array;
}

export const FLV_TAG_TYPE_CODE: Readonly<Record<FlvTagType, number>> = { audio: 8, video: 9, data: 18 };

export function flvTagTypeFromCode(code: number): FlvTagType | null {
  switch (code) {
    case 8:
      return "audio";
    case 9:
      return "video";
    case 18:
      return "data";
    default:
      return null;
  }
}

/** "FLV", version, flags, data offset (9) — then PreviousTagSize0. */
export const FLV_HEADER_SIZE = 9;
export const FLV_TAG_HEADER_SIZE = 11;
export const FLV_PREVIOUS_TAG_SIZE_SIZE = 4;
/** DataSize is a 24-bit field. */
export const FLV_MAX_TAG_BODY_SIZE = 0xffffff;
