import { BitReader, BitReaderError } from "./bit-reader.ts";

/** FLV audio tag bodies carrying AAC (SoundFormat 10), and the AudioSpecificConfig inside the sequence header. */

export class AacFormatError extends Error {
  override readonly name = "AacFormatError";
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`FLV/AAC ${field}: ${detail}`);
  }
}

/** The stream is audio but not AAC: we only repackage, so nothing else can go out. */
export class UnsupportedAudioCodecError extends Error {
  override readonly name = "UnsupportedAudioCodecError";
  constructor(readonly codec: string) {
    super(`FLV audio SoundFormat: unsupported codec ${codec} (only AAC, SoundFormat 10)`);
  }
}

export type AacPacketType = "sequence-header" | "raw";

export interface FlvAudioTag {
  soundFormat: number;
  aacPacketType: AacPacketType;
  /** AudioSpecificConfig for a sequence header; one raw AAC frame otherwise. A view into the body. */
  data: Uint8Array;
}

const SOUND_FORMAT_NAMES: Record<number, string> = {
  0: "PCM",
  1: "ADPCM",
  2: "MP3",
  3: "PCM LE",
  4: "Nellymoser 16k",
  5: "Nellymoser 8k",
  6: "Nellymoser",
  7: "G.711 A-law",
  8: "G.711 mu-law",
  11: "Speex",
  14: "MP3 8k",
};

export function parseFlvAudioTag(body: Uint8Array): FlvAudioTag {
  if (body.length < 1) throw new AacFormatError("SoundFormat", "empty audio tag");
  const soundFormat = body[0]! >>> 4;
  if (soundFormat === 9) throw new UnsupportedAudioCodecError("enhanced-RTMP audio");
  if (soundFormat !== 10) throw new UnsupportedAudioCodecError(SOUND_FORMAT_NAMES[soundFormat] ?? `SoundFormat ${soundFormat}`);
  if (body.length < 2) throw new AacFormatError("AACPacketType", "audio tag too short");
  const t = body[1]!;
  if (t > 1) throw new AacFormatError("AACPacketType", `unknown value ${t}`);
  return { soundFormat, aacPacketType: t === 0 ? "sequence-header" : "raw", data: body.subarray(2) };
}

export interface AacConfig {
  /** MPEG-4 Audio Object Type: 2 = AAC-LC, 5 = SBR (HE-AAC), 29 = PS (HE-AACv2). */
  objectType: number;
  /** Core sampling rate as signalled (for HE-AAC, the output rate is extensionSampleRate). */
  sampleRate: number;
  /** Output rate with SBR when signalled explicitly; null otherwise. */
  extensionSampleRate: number | null;
  /** 0 means "defined in the program config element" (not parsed). */
  channels: number;
  channelConfiguration: number;
  /** RFC 6381 codec string, e.g. "mp4a.40.2". */
  codec: string;
  /** The config itself: the WebCodecs/mediabunny `description` for AAC. */
  description: Uint8Array;
}

const SAMPLE_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];
// channelConfiguration 7 is 7.1 (8 channels); 1-6 equal the count.
const CHANNELS = [0, 1, 2, 3, 4, 5, 6, 8];

/** Parses an AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1). */
export function parseAudioSpecificConfig(asc: Uint8Array): AacConfig {
  if (asc.length < 2) throw new AacFormatError("AudioSpecificConfig", `too short (${asc.length} bytes)`);
  try {
    const r = new BitReader(asc);
    const objectType = readObjectType(r);
    const sampleRate = readSampleRate(r, "samplingFrequencyIndex");
    const channelConfiguration = r.u(4, "channelConfiguration");
    let extensionSampleRate: number | null = null;
    if (objectType === 5 || objectType === 29) {
      // Explicit hierarchical SBR signalling: the output rate and the core
      // object type follow; the codec string keeps 5/29 as players expect.
      extensionSampleRate = readSampleRate(r, "extensionSamplingFrequencyIndex");
      const core = readObjectType(r);
      if (core === 22) r.u(4, "extensionChannelConfiguration");
    }
    if (channelConfiguration > 7) {
      throw new AacFormatError("channelConfiguration", `reserved value ${channelConfiguration}`);
    }
    return {
      objectType,
      sampleRate,
      extensionSampleRate,
      channels: CHANNELS[channelConfiguration]!,
      channelConfiguration,
      codec: `mp4a.40.${objectType}`,
      description: asc,
    };
  } catch (err) {
    if (err instanceof BitReaderError) throw new AacFormatError(err.field, "AudioSpecificConfig truncated");
    throw err;
  }
}

function readObjectType(r: BitReader): number {
  const t = r.u(5, "audioObjectType");
  return t === 31 ? 32 + r.u(6, "audioObjectTypeExt") : t;
}

function readSampleRate(r: BitReader, field: string): number {
  const index = r.u(4, field);
  if (index === 15) return r.u(24, "samplingFrequency");
  const rate = SAMPLE_RATES[index];
  if (rate === undefined) throw new AacFormatError(field, `reserved value ${index}`);
  return rate;
}
