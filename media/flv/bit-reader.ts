/** MSB-first bit reader with H.264 exp-Golomb codes, for SPS and AudioSpecificConfig. */
export class BitReaderError extends Error {
  override readonly name = "BitReaderError";
  constructor(readonly field: string) {
    super(`ran out of bits while reading ${field}`);
  }
}

export class BitReader {
  private pos = 0; // in bits

  constructor(private readonly bytes: Uint8Array) {}

  get bitsLeft(): number {
    return this.bytes.length * 8 - this.pos;
  }

  /** Reads up to 32 bits as an unsigned number. `field` names what is read, for errors. */
  u(bits: number, field: string): number {
    if (bits > this.bitsLeft) throw new BitReaderError(field);
    let v = 0;
    for (let i = 0; i < bits; i++) {
      const byte = this.bytes[this.pos >>> 3]!;
      v = v * 2 + ((byte >>> (7 - (this.pos & 7))) & 1);
      this.pos++;
    }
    return v;
  }

  flag(field: string): boolean {
    return this.u(1, field) === 1;
  }

  /** ue(v): unsigned exp-Golomb. */
  ue(field: string): number {
    let zeros = 0;
    while (this.u(1, field) === 0) {
      if (++zeros > 31) throw new BitReaderError(field);
    }
    return zeros === 0 ? 0 : 2 ** zeros - 1 + this.u(zeros, field);
  }

  /** se(v): signed exp-Golomb. */
  se(field: string): number {
    const k = this.ue(field);
    return k % 2 === 1 ? (k + 1) / 2 : -(k / 2);
  }
}

/**
 * H.264 escapes 00 00 0x (x <= 3) as 00 00 03 0x inside NAL units; the escape
 * byte is not part of the syntax and would shift every later field.
 */
export function removeEmulationPrevention(nal: Uint8Array): Uint8Array {
  let zeros = 0;
  let needed = false;
  for (let i = 0; i < nal.length; i++) {
    const b = nal[i]!;
    if (zeros >= 2 && b === 3) {
      needed = true;
      break;
    }
    zeros = b === 0 ? zeros + 1 : 0;
  }
  if (!needed) return nal;
  const out = new Uint8Array(nal.length);
  let n = 0;
  zeros = 0;
  for (let i = 0; i < nal.length; i++) {
    const b = nal[i]!;
    if (zeros >= 2 && b === 3) {
      zeros = 0;
      continue;
    }
    out[n++] = b;
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return out.subarray(0, n);
}
