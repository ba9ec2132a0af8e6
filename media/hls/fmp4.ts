/**
 * Just enough fragmented MP4 (ISO BMFF, CMAF-shaped) for live HLS parts: an
 * init segment (ftyp + moov with avc1/mp4a sample entries and mvex) and
 * fragments (moof + mdat) that may start on any frame. mediabunny's fMP4
 * muxer only starts a fragment on a keyframe of every track, so it cannot cut
 * LL-HLS parts of a 2 s GOP; these boxes are simple enough to write here.
 */

export const VIDEO_TIMESCALE = 90_000;

export interface Fmp4Track {
  id: number;
  kind: "video" | "audio";
  timescale: number;
  /** video: the AVCDecoderConfigurationRecord; audio: the AudioSpecificConfig. */
  config: Uint8Array;
  width?: number;
  height?: number;
  channels?: number;
  sampleRate?: number;
}

export interface Fmp4Sample {
  data: Uint8Array;
  /** In the track's timescale. */
  dts: number;
  duration: number;
  /** pts - dts, in the track's timescale (may be negative). */
  cto: number;
  isKeyframe: boolean;
}

const enc = new TextEncoder();

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0);
  return b;
}
function u16(n: number): Uint8Array {
  return new Uint8Array([(n >> 8) & 0xff, n & 0xff]);
}
function u64(n: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(Math.max(0, Math.round(n))));
  return b;
}
function zeros(n: number): Uint8Array {
  return new Uint8Array(n);
}
function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const body = concat(payload);
  return concat([u32(body.length + 8), enc.encode(type), body]);
}
function fullBox(type: string, version: number, flags: number, ...payload: Uint8Array[]): Uint8Array {
  return box(type, new Uint8Array([version, (flags >> 16) & 0xff, (flags >> 8) & 0xff, flags & 0xff]), ...payload);
}

const MATRIX = concat([u32(0x00010000), u32(0), u32(0), u32(0), u32(0x00010000), u32(0), u32(0), u32(0), u32(0x40000000)]);

function descriptor(tag: number, ...payload: Uint8Array[]): Uint8Array {
  const body = concat(payload);
  // Four-byte length form: valid for any size.
  const len = body.length;
  return concat([new Uint8Array([tag, 0x80 | ((len >> 21) & 0x7f), 0x80 | ((len >> 14) & 0x7f), 0x80 | ((len >> 7) & 0x7f), len & 0x7f]), body]);
}

function sampleEntry(t: Fmp4Track): Uint8Array {
  if (t.kind === "video") {
    const name = zeros(32);
    return box("avc1", zeros(6), u16(1), zeros(16), u16(t.width ?? 0), u16(t.height ?? 0), u32(0x00480000), u32(0x00480000), u32(0), u16(1), name, u16(0x0018), u16(0xffff), box("avcC", t.config));
  }
  const esds = fullBox(
    "esds",
    0,
    0,
    descriptor(0x03, u16(0), new Uint8Array([0]), descriptor(0x04, new Uint8Array([0x40, 0x15, 0, 0, 0]), u32(0), u32(0), descriptor(0x05, t.config)), descriptor(0x06, new Uint8Array([0x02]))),
  );
  return box("mp4a", zeros(6), u16(1), zeros(8), u16(t.channels ?? 2), u16(16), zeros(4), u32(((t.sampleRate ?? t.timescale) & 0xffff) * 0x10000), esds);
}

function trak(t: Fmp4Track): Uint8Array {
  const video = t.kind === "video";
  const tkhd = fullBox(
    "tkhd",
    0,
    3,
    u32(0),
    u32(0),
    u32(t.id),
    u32(0),
    u32(0),
    zeros(8),
    u16(0),
    u16(0),
    u16(video ? 0 : 0x0100),
    u16(0),
    MATRIX,
    u32((t.width ?? 0) * 0x10000),
    u32((t.height ?? 0) * 0x10000),
  );
  const mdhd = fullBox("mdhd", 0, 0, u32(0), u32(0), u32(t.timescale), u32(0), u16(0x55c4), u16(0));
  const hdlr = fullBox("hdlr", 0, 0, u32(0), enc.encode(video ? "vide" : "soun"), zeros(12), enc.encode(video ? "VideoHandler\0" : "SoundHandler\0"));
  const mediaHeader = video ? fullBox("vmhd", 0, 1, zeros(8)) : fullBox("smhd", 0, 0, zeros(4));
  const dinf = box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1)));
  const stbl = box(
    "stbl",
    fullBox("stsd", 0, 0, u32(1), sampleEntry(t)),
    fullBox("stts", 0, 0, u32(0)),
    fullBox("stsc", 0, 0, u32(0)),
    fullBox("stsz", 0, 0, u32(0), u32(0)),
    fullBox("stco", 0, 0, u32(0)),
  );
  return box("trak", tkhd, box("mdia", mdhd, hdlr, box("minf", mediaHeader, dinf, stbl)));
}

/** ftyp + moov: the `EXT-X-MAP` of every segment and part. */
export function initSegment(tracks: Fmp4Track[]): Uint8Array {
  const ftyp = box("ftyp", enc.encode("iso6"), u32(0), enc.encode("iso6"), enc.encode("cmfc"), enc.encode("isom"), enc.encode("mp41"));
  const mvhd = fullBox("mvhd", 0, 0, u32(0), u32(0), u32(1000), u32(0), u32(0x00010000), u16(0x0100), zeros(10), MATRIX, zeros(24), u32(Math.max(...tracks.map((t) => t.id)) + 1));
  const mvex = box("mvex", ...tracks.map((t) => fullBox("trex", 0, 0, u32(t.id), u32(1), u32(0), u32(0), u32(0))));
  return concat([ftyp, box("moov", mvhd, ...tracks.map(trak), mvex)]);
}

const KEY_FLAGS = 0x02000000; // sample_depends_on = 2 (an I-frame)
const DELTA_FLAGS = 0x01010000; // depends on others, not a sync sample

/** One moof + mdat holding `samples` of each track (a track without samples is left out). */
export function fragment(sequence: number, tracks: Array<{ track: Fmp4Track; samples: Fmp4Sample[] }>): Uint8Array {
  const used = tracks.filter((t) => t.samples.length > 0);
  const build = (offsets: number[]) =>
    box(
      "moof",
      fullBox("mfhd", 0, 0, u32(sequence)),
      ...used.map(({ track, samples }, i) =>
        box(
          "traf",
          fullBox("tfhd", 0, 0x020000, u32(track.id)),
          fullBox("tfdt", 1, 0, u64(samples[0]!.dts)),
          fullBox(
            "trun",
            1,
            0x000f01,
            u32(samples.length),
            u32(offsets[i] ?? 0),
            ...samples.flatMap((s) => [
              u32(Math.max(0, Math.round(s.duration))),
              u32(s.data.length),
              u32(track.kind === "audio" || s.isKeyframe ? KEY_FLAGS : DELTA_FLAGS),
              u32(Math.round(s.cto) | 0),
            ]),
          ),
        ),
      ),
    );
  const moofSize = build([]).length;
  const offsets: number[] = [];
  let at = moofSize + 8;
  for (const t of used) {
    offsets.push(at);
    at += t.samples.reduce((n, s) => n + s.data.length, 0);
  }
  const mdat = box("mdat", ...used.flatMap((t) => t.samples.map((s) => s.data)));
  return concat([build(offsets), mdat]);
}
