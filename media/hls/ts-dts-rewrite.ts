/**
 * mediabunny's MPEG-TS muxer has no notion of decode timestamps: within a GOP it
 * assigns the sorted presentation timestamps as DTS. For streams with B-frames
 * that yields DTS > PTS on every B-frame (an invalid stream: decoders must
 * reorder by guesswork, Apple's validator rejects it). FLV carries the real
 * DTS, so we put it back: each video PES header already has a DTS field (the
 * muxer always writes PTS+DTS for video), rewritten here in place, in order.
 */

const TS_PACKET = 188;
/** 90 kHz ticks wrap at 33 bits. */
const TS_MODULUS = 2 ** 33;

export class TsRewriteError extends Error {
  override readonly name = "TsRewriteError";
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`MPEG-TS ${field}: ${detail}`);
  }
}

/**
 * Rewrites the DTS of each video PES in `segment` (in place) with the next value
 * from `nextDts` (seconds, decode order). Returns the number rewritten.
 */
export function rewriteVideoDts(segment: Uint8Array, nextDts: () => number | undefined): number {
  if (segment.length % TS_PACKET !== 0) throw new TsRewriteError("packet size", `segment length ${segment.length} is not a multiple of 188`);
  let rewritten = 0;
  for (let p = 0; p < segment.length; p += TS_PACKET) {
    if (segment[p] !== 0x47) throw new TsRewriteError("sync_byte", `missing at offset ${p}`);
    const payloadUnitStart = (segment[p + 1]! & 0x40) !== 0;
    if (!payloadUnitStart) continue;
    const adaptation = (segment[p + 3]! >>> 4) & 0x03;
    if ((adaptation & 0x01) === 0) continue; // no payload
    const payload = p + 4 + (adaptation & 0x02 ? 1 + segment[p + 4]! : 0);
    if (payload + 19 > p + TS_PACKET) continue;
    // PES start code + a video stream id (0xE0-0xEF).
    if (segment[payload] !== 0 || segment[payload + 1] !== 0 || segment[payload + 2] !== 1) continue;
    if ((segment[payload + 3]! & 0xf0) !== 0xe0) continue;
    if ((segment[payload + 7]! & 0xc0) !== 0xc0) continue; // PTS and DTS both present
    const dts = nextDts();
    if (dts === undefined) throw new TsRewriteError("DTS", "more video PES packets than decode timestamps");
    writeTimestamp(segment, payload + 14, 0b0001, Math.round(dts * 90_000));
    rewritten++;
  }
  return rewritten;
}

function writeTimestamp(b: Uint8Array, o: number, prefix: number, ticks: number): void {
  const t = ((ticks % TS_MODULUS) + TS_MODULUS) % TS_MODULUS;
  const high = Math.floor(t / 2 ** 30); // bits 32..30
  const low = t % 2 ** 30;
  b[o] = (prefix << 4) | (high << 1) | 1;
  b[o + 1] = (low >>> 22) & 0xff;
  b[o + 2] = (((low >>> 15) & 0x7f) << 1) | 1;
  b[o + 3] = (low >>> 7) & 0xff;
  b[o + 4] = ((low & 0x7f) << 1) | 1;
}
