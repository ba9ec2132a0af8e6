import type { FlvTag } from "../flv/flv-tag.ts";
import type { PesPacket } from "./mpegts-demuxer.ts";

const WRAP = 2 ** 33;
const SAMPLE_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];

/**
 * MPEG-TS elementary streams → FLV tag bodies, the shape the RTMP path
 * gives a broadcast: H.264 access units (Annex B) become AVCC NALU tags
 * after an AVC sequence header built from the SPS/PPS in the stream
 * (re-sent when they change); ADTS frames become raw AAC tags after an
 * AudioSpecificConfig. Timestamps: milliseconds from the first PES, 33-bit
 * wrap unrolled. Nothing is emitted before the first keyframe with its
 * SPS and PPS, and no audio before that, so the recording and the live
 * HLS start decodable.
 */
export class TsToFlv {
  private base: number | null = null;
  private last = { video: -1, audio: -1 };
  private unrolled = { video: 0, audio: 0 };
  private avcConfig: Uint8Array | null = null;
  private ascSent: string | null = null;
  private started = false;

  /** Whether a keyframe with its configuration has been emitted (the stream is decodable). */
  get videoStarted(): boolean {
    return this.started;
  }

  push(pes: PesPacket): FlvTag[] {
    return pes.kind === "video" ? this.video(pes) : this.audio(pes);
  }

  private ms(kind: "video" | "audio", t90: number): number {
    // Unroll the 33-bit wrap per track.
    if (this.last[kind] >= 0 && t90 + WRAP / 2 < this.last[kind]) this.unrolled[kind] += WRAP;
    this.last[kind] = t90;
    const t = t90 + this.unrolled[kind];
    this.base ??= t;
    return Math.max(0, Math.round((t - this.base) / 90)) >>> 0;
  }

  private video(pes: PesPacket): FlvTag[] {
    const nals = splitAnnexB(pes.data);
    let sps: Uint8Array | undefined;
    let pps: Uint8Array | undefined;
    let key = false;
    const body: Uint8Array[] = [];
    for (const nal of nals) {
      const type = nal[0]! & 0x1f;
      if (type === 7) sps = nal;
      else if (type === 8) pps = nal;
      else if (type === 9)
        continue; // access unit delimiter
      else {
        if (type === 5) key = true;
        body.push(nal);
      }
    }
    const tags: FlvTag[] = [];
    const dts = this.ms("video", pes.dts);
    if (sps && pps && sps.length >= 4) {
      const record = avcRecord(sps, pps);
      if (!this.avcConfig || !same(record, this.avcConfig)) {
        this.avcConfig = record;
        tags.push({ type: "video", timestamp: dts, payload: concat([Uint8Array.of(0x17, 0, 0, 0, 0), record]) });
      }
    }
    if (!this.avcConfig || body.length === 0) return tags;
    if (!this.started && !key) return tags;
    this.started = true;
    const cts = Math.round((((pes.pts - pes.dts + WRAP) % WRAP) / 90) | 0);
    const header = Uint8Array.of(key ? 0x17 : 0x27, 1, (cts >> 16) & 0xff, (cts >> 8) & 0xff, cts & 0xff);
    const parts: Uint8Array[] = [header];
    for (const nal of body) {
      const len = new Uint8Array(4);
      new DataView(len.buffer).setUint32(0, nal.length);
      parts.push(len, nal);
    }
    tags.push({ type: "video", timestamp: dts, payload: concat(parts) });
    return tags;
  }

  private audio(pes: PesPacket): FlvTag[] {
    const tags: FlvTag[] = [];
    const d = pes.data;
    let o = 0;
    let i = 0;
    while (o + 7 <= d.length) {
      if (d[o] !== 0xff || (d[o + 1]! & 0xf6) !== 0xf0) {
        o++;
        continue;
      }
      const protectionAbsent = d[o + 1]! & 1;
      const profile = d[o + 2]! >> 6;
      const sf = (d[o + 2]! >> 2) & 0x0f;
      const ch = ((d[o + 2]! & 1) << 2) | (d[o + 3]! >> 6);
      const len = ((d[o + 3]! & 3) << 11) | (d[o + 4]! << 3) | (d[o + 5]! >> 5);
      const headerLen = protectionAbsent ? 7 : 9;
      if (len < headerLen || o + len > d.length || sf >= SAMPLE_RATES.length) break;
      const rate = SAMPLE_RATES[sf]!;
      const t = this.ms("audio", pes.pts + Math.round((i * 1024 * 90000) / rate));
      if (this.started) {
        const asc = Uint8Array.of(((profile + 1) << 3) | (sf >> 1), ((sf & 1) << 7) | (ch << 3));
        const ascKey = `${asc[0]},${asc[1]}`;
        if (this.ascSent !== ascKey) {
          this.ascSent = ascKey;
          tags.push({ type: "audio", timestamp: t, payload: concat([Uint8Array.of(0xaf, 0), asc]) });
        }
        tags.push({ type: "audio", timestamp: t, payload: concat([Uint8Array.of(0xaf, 1), d.subarray(o + headerLen, o + len)]) });
      }
      o += len;
      i++;
    }
    return tags;
  }
}

/** NAL units of an Annex B byte stream (3- or 4-byte start codes). */
export function splitAnnexB(d: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = -1;
  let i = 0;
  while (i + 2 < d.length) {
    if (d[i] === 0 && d[i + 1] === 0 && d[i + 2] === 1) {
      if (start >= 0) out.push(trimZeros(d.subarray(start, i)));
      i += 3;
      start = i;
    } else i++;
  }
  if (start >= 0 && start < d.length) out.push(d.subarray(start));
  return out.filter((n) => n.length > 0);
}

function trimZeros(n: Uint8Array): Uint8Array {
  let end = n.length;
  while (end > 0 && n[end - 1] === 0) end--;
  return n.subarray(0, end);
}

/** AVCDecoderConfigurationRecord with one SPS and one PPS, 4-byte NAL lengths. */
function avcRecord(sps: Uint8Array, pps: Uint8Array): Uint8Array {
  return concat([Uint8Array.of(1, sps[1]!, sps[2]!, sps[3]!, 0xff, 0xe1, sps.length >> 8, sps.length & 0xff), sps, Uint8Array.of(1, pps.length >> 8, pps.length & 0xff), pps]);
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
