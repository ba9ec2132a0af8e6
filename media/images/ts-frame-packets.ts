/**
 * A still from an MPEG-TS segment with less decoding (issue 27, first
 * thumbnail): the frame at `offset` needs the segment's keyframe and the
 * reference frames decoded before it, not the non-reference B-frames in
 * between (about 4 in 10 of x264's frames) nor anything after it. This keeps
 * only those video packets, in order, and moves every timestamp by one amount
 * so that the wanted frame is at exactly FRAME_AT_SECONDS: an ffmpeg started
 * before the request is known can pick it with a fixed `select` (warm-ffmpeg.ts).
 * Pure: bytes in, bytes out. Null whenever the input is not what this reads
 * (not 188-byte TS, no H.264, no frame at or after `offset`, timestamps that
 * wrap): the caller then decodes the whole segment as before.
 */

const PACKET = 188;
const CLOCK = 90_000;
/** Where the wanted frame's timestamp is put: far from 0 and from the 33-bit wrap, so no kept frame goes negative. */
export const FRAME_AT_SECONDS = 10_000;
const WRAP = 2 ** 33;
/** A kept frame this far from the wanted one means timestamps wrapped or are broken: not handled here. */
const MAX_SPAN = 600 * CLOCK;

interface Frame {
  packets: number[];
  pts: number;
  /** nal_ref_idc of the frame's first slice is not 0: later frames may predict from it. */
  reference: boolean | null;
}

const pidOf = (b: Uint8Array, o: number) => ((b[o + 1]! & 0x1f) << 8) | b[o + 2]!;

/** Where a packet's payload starts, or -1 without one. */
function payloadStart(b: Uint8Array, o: number): number {
  const control = (b[o + 3]! >> 4) & 3;
  const start = control & 2 ? o + 5 + b[o + 4]! : o + 4;
  return control & 1 && start < o + PACKET ? start : -1;
}

const readTimestamp = (b: Uint8Array, i: number) => (b[i]! & 0x0e) * 2 ** 29 + b[i + 1]! * 2 ** 22 + (b[i + 2]! & 0xfe) * 2 ** 14 + b[i + 3]! * 2 ** 7 + (b[i + 4]! >> 1);

function writeTimestamp(b: Uint8Array, i: number, value: number): void {
  const prefix = b[i]! & 0xf0;
  b[i] = prefix | (Math.floor(value / 2 ** 30) << 1) | 1;
  b[i + 1] = Math.floor(value / 2 ** 22) & 0xff;
  b[i + 2] = ((Math.floor(value / 2 ** 15) & 0x7f) << 1) | 1;
  b[i + 3] = Math.floor(value / 2 ** 7) & 0xff;
  b[i + 4] = ((value & 0x7f) << 1) | 1;
}

/** The sections of a PSI packet (PAT, PMT): the table's bytes after the pointer field. */
function section(b: Uint8Array, o: number): { at: number; end: number } | null {
  const p = payloadStart(b, o);
  if (p < 0) return null;
  const at = p + 1 + b[p]!;
  const length = ((b[at + 1]! & 0x0f) << 8) | b[at + 2]!;
  return at + 3 + length <= o + PACKET ? { at, end: at + 3 + length - 4 } : null;
}

/**
 * Whether the first slice of a frame's payload (Annex B NAL units, in the byte ranges `[start, end)` of `b` given
 * flat: start, end, start, end…) is a reference picture; null when none is found.
 */
function isReference(b: Uint8Array, ranges: number[]): boolean | null {
  let zeros = 0;
  let next = false;
  for (let r = 0; r < ranges.length; r += 2) {
    for (let i = ranges[r]!; i < ranges[r + 1]!; i++) {
      const byte = b[i]!;
      if (next) {
        const type = byte & 0x1f;
        if (type === 1 || type === 5) return byte >> 5 !== 0;
        next = false;
      }
      if (byte === 0) zeros++;
      else {
        if (byte === 1 && zeros >= 2) next = true;
        zeros = 0;
      }
    }
  }
  return null;
}

/**
 * The packets of `ts` that decode to the frame ffmpeg's `-i segment -ss offset` shows (the first frame at or
 * after the segment's start time plus `offset`, in milliseconds as the arguments write it), that frame moved to
 * FRAME_AT_SECONDS; PAT and PMT first, continuity counters renumbered. Null when this input is not handled.
 */
export function framePackets(ts: Uint8Array, offset: number): Uint8Array | null {
  const count = ts.length / PACKET;
  if (!Number.isInteger(count) || count === 0) return null;
  let pmtPid = -1;
  let videoPid = -1;
  let pat = -1;
  let pmt = -1;
  const frames: Frame[] = [];
  let current: (Frame & { head: number[] }) | null = null;
  for (let k = 0; k < count; k++) {
    const o = k * PACKET;
    if (ts[o] !== 0x47) return null;
    const pid = pidOf(ts, o);
    const unitStart = (ts[o + 1]! & 0x40) !== 0;
    if (pid === 0 && unitStart && pat < 0) {
      const s = section(ts, o);
      if (!s) return null;
      for (let i = s.at + 8; i + 4 <= s.end; i += 4) if (((ts[i]! << 8) | ts[i + 1]!) !== 0) pmtPid = ((ts[i + 2]! & 0x1f) << 8) | ts[i + 3]!;
      pat = k;
      continue;
    }
    if (pid === pmtPid && unitStart && pmt < 0) {
      const s = section(ts, o);
      if (!s) return null;
      const infoLength = ((ts[s.at + 10]! & 0x0f) << 8) | ts[s.at + 11]!;
      for (let i = s.at + 12 + infoLength; i + 5 <= s.end; i += 5 + (((ts[i + 3]! & 0x0f) << 8) | ts[i + 4]!)) {
        if (ts[i] === 0x1b && videoPid < 0) videoPid = ((ts[i + 1]! & 0x1f) << 8) | ts[i + 2]!;
      }
      pmt = k;
      continue;
    }
    const p = payloadStart(ts, o);
    if (unitStart && p >= 0 && ts[p] === 0 && ts[p + 1] === 0 && ts[p + 2] === 1) {
      const hasPts = (ts[p + 7]! & 0x80) !== 0;
      const pts = hasPts ? readTimestamp(ts, p + 9) : -1;
      if (pid !== videoPid) continue;
      if (current) current.reference = isReference(ts, current.head);
      if (!hasPts) return null;
      current = { packets: [k], pts, reference: null, head: [p + 9 + ts[p + 8]!, o + PACKET] };
      frames.push(current);
      continue;
    }
    if (pid === videoPid && current) {
      current.packets.push(k);
      if (p >= 0 && current.head.length < 48) current.head.push(p, o + PACKET);
    }
  }
  if (current) current.reference = isReference(ts, current.head);
  if (videoPid < 0 || pat < 0 || pmt < 0 || frames.length === 0) return null;

  // As ffmpeg's `-ss` after `-i` counts (measured: an AAC track starting earlier does not move it): from the video's
  // first frame, in the milliseconds the arguments are written in (90 ticks each).
  const want = frames[0]!.pts + Math.round(offset * 1000) * (CLOCK / 1000);
  let target = -1;
  for (let i = 0; i < frames.length; i++) if (frames[i]!.pts >= want && (target < 0 || frames[i]!.pts < frames[target]!.pts)) target = i;
  if (target < 0) return null;
  const upTo = frames.slice(0, target + 1);
  if (upTo.some((f) => f.reference === null || Math.abs(f.pts - frames[target]!.pts) > MAX_SPAN)) return null;
  const kept = upTo.filter((f, i) => i === 0 || i === target || f.reference);
  const shift = FRAME_AT_SECONDS * CLOCK - frames[target]!.pts;

  const indexes = [pat, pmt, ...kept.flatMap((f) => f.packets)];
  const out = new Uint8Array(indexes.length * PACKET);
  const counters = new Map<number, number>();
  // Copied in runs of consecutive packets (one subarray per run: per packet, they cost more than the rest).
  for (let n = 0; n < indexes.length; ) {
    let m = n + 1;
    while (m < indexes.length && indexes[m] === indexes[m - 1]! + 1) m++;
    out.set(ts.subarray(indexes[n]! * PACKET, (indexes[m - 1]! + 1) * PACKET), n * PACKET);
    n = m;
  }
  indexes.forEach((_, n) => {
    const o = n * PACKET;
    const pid = pidOf(out, o);
    const control = (out[o + 3]! >> 4) & 3;
    if (control & 1) {
      const cc = ((counters.get(pid) ?? -1) + 1) & 0x0f;
      counters.set(pid, cc);
      out[o + 3] = (out[o + 3]! & 0xf0) | cc;
    }
    // A PCR (adaptation field flag 0x10) moves with the timestamps.
    if (control & 2 && out[o + 4]! >= 7 && out[o + 5]! & 0x10) {
      const base = out[o + 6]! * 2 ** 25 + out[o + 7]! * 2 ** 17 + out[o + 8]! * 2 ** 9 + out[o + 9]! * 2 + (out[o + 10]! >> 7);
      const moved = (((base + shift) % WRAP) + WRAP) % WRAP;
      out[o + 6] = Math.floor(moved / 2 ** 25) & 0xff;
      out[o + 7] = Math.floor(moved / 2 ** 17) & 0xff;
      out[o + 8] = Math.floor(moved / 2 ** 9) & 0xff;
      out[o + 9] = Math.floor(moved / 2) & 0xff;
      out[o + 10] = ((moved & 1) << 7) | (out[o + 10]! & 0x7f);
    }
    const p = payloadStart(out, o);
    if (pid !== videoPid || !(out[o + 1]! & 0x40) || p < 0 || out[p] !== 0 || out[p + 1] !== 0 || out[p + 2] !== 1) return;
    const flags = out[p + 7]!;
    if (flags & 0x80) writeTimestamp(out, p + 9, readTimestamp(out, p + 9) + shift);
    if ((flags & 0xc0) === 0xc0) writeTimestamp(out, p + 14, readTimestamp(out, p + 14) + shift);
  });
  return out;
}
