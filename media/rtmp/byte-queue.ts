/**
 * FIFO of received bytes. Socket reads arrive in arbitrary slices that cut
 * through handshakes and chunk headers; this keeps them without concatenating
 * on every read (which would be quadratic for a large chunk arriving in many
 * small reads) and lets parsers peek before committing.
 */
export class ByteQueue {
  private chunks: Uint8Array[] = [];
  /** Read position inside chunks[0]. */
  private head = 0;
  private total = 0;

  get length(): number {
    return this.total;
  }

  /** Keeps a reference to `bytes`: the caller must not reuse the buffer. */
  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.chunks.push(bytes);
    this.total += bytes.length;
  }

  /** Byte at `index` from the front; caller checks `index < length`. */
  peek(index: number): number {
    let i = index + this.head;
    for (const chunk of this.chunks) {
      if (i < chunk.length) return chunk[i]!;
      i -= chunk.length;
    }
    throw new RangeError(`peek(${index}) past end of queue (${this.total})`);
  }

  /**
   * Up to `n` bytes from the front without consuming them: a view into the
   * first chunk when it holds them all (the usual case), else a small copy.
   */
  peekBytes(n: number): Uint8Array {
    const count = Math.min(n, this.total);
    const first = this.chunks[0];
    if (first && first.length - this.head >= count) return first.subarray(this.head, this.head + count);
    const out = new Uint8Array(count);
    this.copyOut(out, count, false);
    return out;
  }

  /** Removes and returns the first `n` bytes as a fresh buffer the caller owns. */
  take(n: number): Uint8Array {
    if (n > this.total) throw new RangeError(`take(${n}) past end of queue (${this.total})`);
    const out = new Uint8Array(n);
    this.copyOut(out, n, true);
    return out;
  }

  /** Discards the first `n` bytes. */
  skip(n: number): void {
    if (n > this.total) throw new RangeError(`skip(${n}) past end of queue (${this.total})`);
    let left = n;
    while (left > 0) {
      const chunk = this.chunks[0]!;
      const available = chunk.length - this.head;
      if (left < available) {
        this.head += left;
        break;
      }
      left -= available;
      this.chunks.shift();
      this.head = 0;
    }
    this.total -= n;
  }

  clear(): void {
    this.chunks = [];
    this.head = 0;
    this.total = 0;
  }

  private copyOut(out: Uint8Array, n: number, consume: boolean): void {
    let written = 0;
    let head = this.head;
    let index = 0;
    while (written < n) {
      const chunk = this.chunks[index]!;
      const count = Math.min(chunk.length - head, n - written);
      out.set(chunk.subarray(head, head + count), written);
      written += count;
      head += count;
      if (head === chunk.length) {
        index++;
        head = 0;
      }
    }
    if (consume) {
      this.chunks.splice(0, index);
      this.head = head;
      this.total -= n;
    }
  }
}
