import { parseAudioSpecificConfig, type AacConfig } from "../flv/aac.ts";
import { avcCodecString, parseAvcDecoderConfig, type AvcDecoderConfig } from "../flv/avc.ts";
import { parseSps, type H264Sps } from "../flv/sps.ts";

/**
 * What mediabunny needs to mux a track without decoding it, built from the FLV
 * sequence headers: the codec string, the record as `description`, and for
 * video the picture size (mediabunny refuses a video config without one).
 */
export interface VideoTrackConfig {
  decoderConfig: { codec: string; codedWidth: number; codedHeight: number; description: Uint8Array };
  avc: AvcDecoderConfig;
  sps: H264Sps;
}

export interface AudioTrackConfig {
  decoderConfig: { codec: string; sampleRate: number; numberOfChannels: number; description: Uint8Array };
  aac: AacConfig;
  /** Seconds per AAC frame (1024 core samples; HE-AAC's 2048 output samples come to the same). */
  frameDuration: number;
}

/** `record` is the AVC sequence header body (an AVCDecoderConfigurationRecord). It is copied. */
export function videoTrackConfig(record: Uint8Array): VideoTrackConfig {
  const avc = parseAvcDecoderConfig(record.slice());
  const sps = parseSps(avc.sps[0]!);
  // The displayed (cropped) size: it is what players report and what HLS RESOLUTION means.
  return {
    decoderConfig: { codec: avcCodecString(avc), codedWidth: sps.width, codedHeight: sps.height, description: avc.record },
    avc,
    sps,
  };
}

/** `asc` is the AAC sequence header body (an AudioSpecificConfig). It is copied. */
export function audioTrackConfig(asc: Uint8Array): AudioTrackConfig {
  const aac = parseAudioSpecificConfig(asc.slice());
  return {
    decoderConfig: {
      codec: aac.codec,
      sampleRate: aac.extensionSampleRate ?? aac.sampleRate,
      // A PCE-defined layout (0) is rare in live AAC; stereo is the safe guess for the playlist's CHANNELS.
      numberOfChannels: aac.channels || 2,
      description: aac.description,
    },
    aac,
    frameDuration: 1024 / aac.sampleRate,
  };
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
