/** FLV video tag bodies carrying H.264 (codec id 7), and the avcC record inside the sequence header. */

export class AvcFormatError extends Error {
  override readonly name = "AvcFormatError";
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`FLV/AVC ${field}: ${detail}`);
  }
}

/** The stream is video but not H.264: we only repackage, so nothing else can go out. */
export class UnsupportedVideoCodecError extends Error {
  override readonly name = "UnsupportedVideoCodecError";
  constructor(readonly codec: string) {
    super(`FLV video CodecID: unsupported codec ${codec} (only H.264/AVC, CodecID 7)`);
  }
}

export type FlvVideoFrameType = "key" | "inter" | "disposable-inter" | "generated-key" | "command";
export type AvcPacketType = "sequence-header" | "nalu" | "end-of-sequence";

export interface FlvVideoTag {
  frameType: FlvVideoFrameType;
  /** FLV's own keyframe flag (frame type 1). */
  isKeyframe: boolean;
  codecId: number;
  /** Null for command frames, which carry no AVC packet. */
  avcPacketType: AvcPacketType | null;
  /** pts - dts in ms (signed 24-bit). */
  compositionTimeMs: number;
  /** avcC record for a sequence header; length-prefixed NAL units for 'nalu'. A view into the body. */
  data: Uint8Array;
}

const FRAME_TYPES: Record<number, FlvVideoFrameType> = {
  1: "key",
  2: "inter",
  3: "disposable-inter",
  4: "generated-key",
  5: "command",
};
const CODEC_NAMES: Record<number, string> = { 2: "Sorenson H.263", 3: "Screen video", 4: "VP6", 5: "VP6 alpha", 6: "Screen video v2", 12: "HEVC" };

export function parseFlvVideoTag(body: Uint8Array): FlvVideoTag {
  if (body.length < 1) throw new AvcFormatError("FrameType", "empty video tag");
  const b0 = body[0]!;
  if (b0 & 0x80) {
    // Enhanced RTMP: the low 4 bits are a packet type and a FourCC follows.
    const fourcc = body.length >= 5 ? String.fromCharCode(...body.subarray(1, 5)) : "?";
    throw new UnsupportedVideoCodecError(`enhanced-RTMP "${fourcc}"`);
  }
  const frameType = FRAME_TYPES[b0 >>> 4];
  if (!frameType) throw new AvcFormatError("FrameType", `unknown value ${b0 >>> 4}`);
  const codecId = b0 & 0x0f;
  if (codecId !== 7) throw new UnsupportedVideoCodecError(CODEC_NAMES[codecId] ?? `CodecID ${codecId}`);
  if (frameType === "command") {
    return { frameType, isKeyframe: false, codecId, avcPacketType: null, compositionTimeMs: 0, data: body.subarray(1) };
  }
  if (body.length < 5) throw new AvcFormatError("AVCPacketType", `video tag of ${body.length} bytes is too short`);
  const packetTypeCode = body[1]!;
  const avcPacketType: AvcPacketType | undefined = (["sequence-header", "nalu", "end-of-sequence"] as const)[packetTypeCode];
  if (!avcPacketType) throw new AvcFormatError("AVCPacketType", `unknown value ${packetTypeCode}`);
  // SI24, sign-extended.
  const compositionTimeMs = ((body[2]! << 24) | (body[3]! << 16) | (body[4]! << 8)) >> 8;
  return { frameType, isKeyframe: frameType === "key", codecId, avcPacketType, compositionTimeMs, data: body.subarray(5) };
}

export interface AvcDecoderConfig {
  profileIndication: number;
  profileCompatibility: number;
  levelIndication: number;
  /** Bytes in each NAL unit length prefix (1, 2 or 4). */
  nalLengthSize: number;
  sps: Uint8Array[];
  pps: Uint8Array[];
  /** The record itself: the WebCodecs/mediabunny `description` for avc1. */
  record: Uint8Array;
}

/** Parses an AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3.1). */
export function parseAvcDecoderConfig(record: Uint8Array): AvcDecoderConfig {
  if (record.length < 7) throw new AvcFormatError("AVCDecoderConfigurationRecord", `too short (${record.length} bytes)`);
  if (record[0] !== 1) throw new AvcFormatError("configurationVersion", `expected 1, got ${record[0]}`);
  const nalLengthSize = (record[4]! & 0x03) + 1;
  if (nalLengthSize === 3) throw new AvcFormatError("lengthSizeMinusOne", "value 2 is reserved");
  let o = 6; // after numOfSequenceParameterSets
  const readSets = (count: number, field: string): Uint8Array[] => {
    const sets: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      if (o + 2 > record.length) throw new AvcFormatError(`${field}Length`, "record truncated");
      const len = (record[o]! << 8) | record[o + 1]!;
      o += 2;
      if (o + len > record.length) throw new AvcFormatError(`${field}NALUnit`, "record truncated");
      sets.push(record.subarray(o, o + len));
      o += len;
    }
    return sets;
  };
  const sps = readSets(record[5]! & 0x1f, "sequenceParameterSet");
  if (o >= record.length) throw new AvcFormatError("numOfPictureParameterSets", "record truncated");
  const pps = readSets(record[o++]!, "pictureParameterSet");
  if (sps.length === 0) throw new AvcFormatError("numOfSequenceParameterSets", "no SPS in the record");
  return {
    profileIndication: record[1]!,
    profileCompatibility: record[2]!,
    levelIndication: record[3]!,
    nalLengthSize,
    sps,
    pps,
    record,
  };
}

/** RFC 6381 codec string, e.g. "avc1.4d401e". */
export function avcCodecString(config: Pick<AvcDecoderConfig, "profileIndication" | "profileCompatibility" | "levelIndication">): string {
  const hex = (n: number) => n.toString(16).padStart(2, "0");
  return `avc1.${hex(config.profileIndication)}${hex(config.profileCompatibility)}${hex(config.levelIndication)}`;
}

/** Splits length-prefixed (AVCC) NAL units. Views into `data`. */
export function splitAvccNalUnits(data: Uint8Array, nalLengthSize: number): Uint8Array[] {
  const units: Uint8Array[] = [];
  let o = 0;
  while (o + nalLengthSize <= data.length) {
    let len = 0;
    for (let i = 0; i < nalLengthSize; i++) len = len * 256 + data[o + i]!;
    o += nalLengthSize;
    if (o + len > data.length) throw new AvcFormatError("NALUnitLength", `${len} overruns the ${data.length}-byte packet`);
    units.push(data.subarray(o, o + len));
    o += len;
  }
  return units;
}

/** True when the access unit holds an IDR slice (NAL type 5): a safe segment start. */
export function containsIdr(data: Uint8Array, nalLengthSize: number): boolean {
  return splitAvccNalUnits(data, nalLengthSize).some((nal) => nal.length > 0 && (nal[0]! & 0x1f) === 5);
}
