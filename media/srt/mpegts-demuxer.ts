/**
 * A push MPEG-TS demuxer for live ingest: 188-byte packets in any chunking →
 * PAT → PMT → whole PES packets of the first H.264 (stream type 0x1b) and
 * first ADTS AAC (0x0f) elementary streams, with their 90 kHz PTS/DTS.
 * Hand-written (about 150 lines) because the input is an unbounded live
 * byte stream pushed to us a few packets at a time; mediabunny's
 * MpegTsInputFormat reads a bounded, seekable source by pulling.
 * Hostile input: resynchronizes on the 0x47 sync byte, caps each PES at
 * `maxPesBytes`, never throws.
 */
export interface PesPacket {
  kind: "video" | "audio";
  /** 90 kHz, 33-bit. */
  pts: number;
  dts: number;
  data: Uint8Array;
}

const TS = 188;

interface PesBuffer {
  kind: "video" | "audio";
  chunks: Uint8Array[];
  bytes: number;
  /** PES_packet_length + 6 when known (audio usually), else 0 (video: until the next start). */
  expected: number;
}

export class MpegTsDemuxer {
  private rest: Uint8Array = new Uint8Array(0);
  private pmtPid = -1;
  private videoPid = -1;
  private audioPid = -1;
  private pes = new Map<number, PesBuffer>();
  /** Packets skipped to find sync again, PES dropped as malformed or too large. */
  readonly stats = { resyncs: 0, dropped: 0, packets: 0 };

  constructor(private readonly maxPesBytes = 8 << 20) {}

  push(chunk: Uint8Array): PesPacket[] {
    const out: PesPacket[] = [];
    let buf = chunk;
    if (this.rest.length > 0) {
      buf = new Uint8Array(this.rest.length + chunk.length);
      buf.set(this.rest);
      buf.set(chunk, this.rest.length);
    }
    let o = 0;
    while (o + TS <= buf.length) {
      if (buf[o] !== 0x47) {
        this.stats.resyncs++;
        const next = buf.indexOf(0x47, o + 1);
        o = next < 0 ? buf.length : next;
        continue;
      }
      this.packet(buf.subarray(o, o + TS), out);
      o += TS;
    }
    this.rest = buf.slice(o);
    return out;
  }

  /** The PES under way of each stream (video's has no length): at the end of the input. */
  flush(): PesPacket[] {
    const out: PesPacket[] = [];
    for (const pid of [...this.pes.keys()]) this.finish(pid, out);
    return out;
  }

  private packet(p: Uint8Array, out: PesPacket[]) {
    this.stats.packets++;
    const pusi = (p[1]! & 0x40) !== 0;
    const pid = ((p[1]! & 0x1f) << 8) | p[2]!;
    const afc = (p[3]! >> 4) & 3;
    if (!(afc & 1)) return; // no payload
    let o = 4;
    if (afc & 2) o += 1 + p[4]!;
    if (o >= TS) return;
    const payload = p.subarray(o);
    if (pid === 0) {
      if (pusi) this.pat(payload);
    } else if (pid === this.pmtPid) {
      if (pusi) this.pmt(payload);
    } else if (pid === this.videoPid || pid === this.audioPid) {
      if (pusi) {
        this.finish(pid, out);
        if (payload.length < 6 || payload[0] !== 0 || payload[1] !== 0 || payload[2] !== 1) return;
        const len = (payload[4]! << 8) | payload[5]!;
        this.pes.set(pid, { kind: pid === this.videoPid ? "video" : "audio", chunks: [payload.slice()], bytes: payload.length, expected: len ? len + 6 : 0 });
      } else {
        const cur = this.pes.get(pid);
        if (!cur) return;
        cur.chunks.push(payload.slice());
        cur.bytes += payload.length;
        if (cur.bytes > this.maxPesBytes) {
          this.pes.delete(pid);
          this.stats.dropped++;
          return;
        }
      }
      const cur = this.pes.get(pid);
      if (cur?.expected && cur.bytes >= cur.expected) this.finish(pid, out);
    }
  }

  /** A section after its pointer field, checked for length; null if malformed. */
  private section(payload: Uint8Array): Uint8Array | null {
    const start = 1 + payload[0]!;
    if (start + 3 > payload.length) return null;
    const len = ((payload[start + 1]! & 0x0f) << 8) | payload[start + 2]!;
    const end = start + 3 + len;
    if (end > payload.length || len < 9) return null;
    return payload.subarray(start, end - 4); // without the CRC
  }

  private pat(payload: Uint8Array) {
    const s = this.section(payload);
    if (s?.[0] !== 0) return;
    for (let o = 8; o + 4 <= s.length; o += 4) {
      const program = (s[o]! << 8) | s[o + 1]!;
      if (program !== 0) {
        this.pmtPid = ((s[o + 2]! & 0x1f) << 8) | s[o + 3]!;
        return;
      }
    }
  }

  private pmt(payload: Uint8Array) {
    const s = this.section(payload);
    if (s?.[0] !== 2) return;
    const infoLen = ((s[10]! & 0x0f) << 8) | s[11]!;
    let video = -1;
    let audio = -1;
    for (let o = 12 + infoLen; o + 5 <= s.length; ) {
      const type = s[o]!;
      const pid = ((s[o + 1]! & 0x1f) << 8) | s[o + 2]!;
      const esLen = ((s[o + 3]! & 0x0f) << 8) | s[o + 4]!;
      if (type === 0x1b && video < 0) video = pid;
      if (type === 0x0f && audio < 0) audio = pid;
      o += 5 + esLen;
    }
    this.videoPid = video;
    this.audioPid = audio;
  }

  private finish(pid: number, out: PesPacket[]) {
    const cur = this.pes.get(pid);
    if (!cur) return;
    this.pes.delete(pid);
    const pes = new Uint8Array(cur.bytes);
    let o = 0;
    for (const c of cur.chunks) {
      pes.set(c, o);
      o += c.length;
    }
    const parsed = parsePes(cur.expected ? pes.subarray(0, cur.expected) : pes);
    if (!parsed) {
      this.stats.dropped++;
      return;
    }
    out.push({ kind: cur.kind, ...parsed });
  }
}

function parsePes(pes: Uint8Array): { pts: number; dts: number; data: Uint8Array } | null {
  if (pes.length < 9) return null;
  const flags = pes[7]!;
  const headerLen = pes[8]!;
  const start = 9 + headerLen;
  if (start > pes.length || !(flags & 0x80) || headerLen < 5) return null;
  const pts = timestamp(pes, 9);
  const dts = flags & 0x40 && headerLen >= 10 ? timestamp(pes, 14) : pts;
  return { pts, dts, data: pes.subarray(start) };
}

/** A 33-bit PES timestamp (5 bytes with marker bits). */
function timestamp(b: Uint8Array, o: number): number {
  return ((b[o]! >> 1) & 0x07) * 2 ** 30 + ((b[o + 1]! << 7) | (b[o + 2]! >> 1)) * 2 ** 15 + ((b[o + 3]! << 7) | (b[o + 4]! >> 1));
}
