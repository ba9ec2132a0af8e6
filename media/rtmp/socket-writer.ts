/**
 * Bun's `socket.write` is unbuffered: it returns how many bytes the kernel
 * took, and the rest is ours to resend on `drain`. This queue does that and
 * tells writers when to wait, so a fast producer (the publisher in "fast"
 * mode) cannot pile data up in memory.
 */

export interface WritableSocket {
  write(data: Uint8Array, byteOffset?: number, byteLength?: number): number;
}

export class SocketWriter {
  private queue: Uint8Array[] = [];
  /** Bytes of queue[0] already written. */
  private offset = 0;
  private pending = 0;
  private closed = false;
  private corked = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly socket: WritableSocket) {}

  /** Bytes accepted by `write` but not yet taken by the kernel. */
  get pendingBytes(): number {
    return this.pending;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Collect writes until uncork(): processing one socket read can produce many
   * small replies (a batch of pings, the four messages answering connect), and
   * one syscall for all of them is much cheaper than one each.
   */
  cork(): void {
    this.corked = true;
  }

  uncork(): void {
    this.corked = false;
    this.flush();
  }

  /** Takes ownership of `bytes`. Writes after close are dropped. */
  write(bytes: Uint8Array): void {
    if (this.closed || bytes.length === 0) return;
    if (this.queue.length === 0 && !this.corked) {
      const n = this.socket.write(bytes);
      if (n < 0) return this.markClosed();
      if (n === bytes.length) return;
      this.offset = n;
    }
    this.queue.push(bytes);
    this.pending += bytes.length - (this.queue.length === 1 ? this.offset : 0);
  }

  /** Call from the socket's `drain` handler. */
  flush(): void {
    if (this.corked) return;
    if (this.queue.length > 1) this.coalesce();
    while (!this.closed && this.queue.length > 0) {
      const head = this.queue[0]!;
      const left = head.length - this.offset;
      const n = this.socket.write(head, this.offset, left);
      if (n < 0) return this.markClosed();
      this.pending -= n;
      if (n < left) {
        this.offset += n;
        return;
      }
      this.queue.shift();
      this.offset = 0;
    }
    if (this.queue.length === 0) this.wake();
  }

  /** Resolves once everything queued has reached the kernel (or the socket closed). */
  whenDrained(): Promise<void> {
    if (this.closed || this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Merges the queue into one buffer so the next write is one syscall. */
  private coalesce(): void {
    const merged = new Uint8Array(this.pending);
    let o = 0;
    for (let i = 0; i < this.queue.length; i++) {
      const part = i === 0 ? this.queue[i]!.subarray(this.offset) : this.queue[i]!;
      merged.set(part, o);
      o += part.length;
    }
    this.queue = [merged];
    this.offset = 0;
  }

  markClosed(): void {
    this.closed = true;
    this.queue = [];
    this.pending = 0;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
