import { parseAudioSpecificConfig, parseFlvAudioTag } from "./aac.ts";
import { avcCodecString, parseAvcDecoderConfig, parseFlvVideoTag } from "./avc.ts";
import { readFlvFile } from "./flv-reader.ts";
import type { FlvTag } from "./flv-tag.ts";
import { parseSps } from "./sps.ts";

export interface FlvProbe {
  /** From the first AVC sequence header's SPS (cropped size). */
  width: number | null;
  height: number | null;
  /** `${width}x${height}`, the spec's recording `resolution` (2.9). */
  resolution: string | null;
  videoCodec: string | null;
  audioCodec: string | null;
  audioSampleRate: number | null;
  audioChannels: number | null;
  hasVideo: boolean;
  hasAudio: boolean;
  /** Last minus first media timestamp, in seconds (0 for an empty recording). */
  durationSeconds: number;
  tags: number;
}

/**
 * Describes a recording without ffprobe, by streaming its tags once. Tolerates a
 * file cut by a crash (see readFlvTags). Malformed codec headers leave the
 * corresponding fields null rather than failing the whole probe.
 */
export async function probeFlvFile(path: string): Promise<FlvProbe> {
  return probeFlvTags(readFlvFile(path));
}

/** What a recording without any tag probes as. */
export function emptyFlvProbe(): FlvProbe {
  return {
    width: null,
    height: null,
    resolution: null,
    videoCodec: null,
    audioCodec: null,
    audioSampleRate: null,
    audioChannels: null,
    hasVideo: false,
    hasAudio: false,
    durationSeconds: 0,
    tags: 0,
  };
}

export async function probeFlvTags(tags: AsyncIterable<FlvTag> | Iterable<FlvTag>): Promise<FlvProbe> {
  const p = emptyFlvProbe();
  let first = Infinity;
  let last = -Infinity;
  for await (const tag of tags) {
    p.tags++;
    if (tag.type === "data") continue;
    first = Math.min(first, tag.timestamp);
    last = Math.max(last, tag.timestamp);
    try {
      if (tag.type === "video") {
        p.hasVideo = true;
        if (p.width !== null) continue;
        const v = parseFlvVideoTag(tag.payload);
        if (v.avcPacketType !== "sequence-header") continue;
        const config = parseAvcDecoderConfig(v.data);
        const sps = parseSps(config.sps[0]!);
        p.width = sps.width;
        p.height = sps.height;
        p.resolution = `${sps.width}x${sps.height}`;
        p.videoCodec = avcCodecString(config);
      } else {
        p.hasAudio = true;
        if (p.audioCodec !== null) continue;
        const a = parseFlvAudioTag(tag.payload);
        if (a.aacPacketType !== "sequence-header") continue;
        const asc = parseAudioSpecificConfig(a.data);
        p.audioCodec = asc.codec;
        p.audioSampleRate = asc.extensionSampleRate ?? asc.sampleRate;
        p.audioChannels = asc.channels;
      }
    } catch {
      // Unsupported codec or a bad header: the fields stay null.
    }
  }
  if (last >= first) p.durationSeconds = (last - first) / 1000;
  return p;
}
