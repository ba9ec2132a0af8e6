/**
 * The ingest bitrate cap of one stream: a token bucket. It refills at the
 * cap (bytes per second) and holds at most `burstSeconds` of it; it starts
 * full. Each message's payload takes its bytes out; a publisher that empties
 * it is over the cap.
 *
 * Said as a window: over ANY interval of length T, a publisher may send at
 * most cap × (T + burstSeconds) bytes. So the first seconds of a publish and
 * keyframe bursts (up to `burstSeconds` of the cap at once) pass, an encoder
 * at or under the cap is never cut however long it runs, and one sending at
 * r > cap is cut after burstSeconds × cap / (r − cap) seconds (5 s at 2x the
 * cap, 1.7 s at 4x). A plain sliding-window average with a start allowance
 * would either cut a burst-then-at-cap encoder or let ~(1 + allowance/window)
 * times the cap through forever; the bucket does neither.
 */
export class BitrateMeter {
  private readonly bytesPerMs: number;
  private readonly capacity: number;
  private tokens: number;
  private at: number;
  /** When the bucket was last full, and the bytes taken since: what the log reports as the measured rate. */
  private drainingSince: number;
  private bytesSinceFull = 0;

  constructor(
    readonly limitKbps: number,
    readonly burstSeconds: number,
    now: number,
  ) {
    this.bytesPerMs = (limitKbps * 1000) / 8 / 1000;
    this.capacity = this.bytesPerMs * burstSeconds * 1000;
    this.tokens = this.capacity;
    this.at = now;
    this.drainingSince = now;
  }

  /** Counts `bytes` received at `now` (ms, monotonic). False once the publisher is over the cap. */
  add(bytes: number, now: number): boolean {
    this.refill(now);
    if (this.tokens >= this.capacity) {
      this.drainingSince = now;
      this.bytesSinceFull = 0;
    }
    this.tokens -= bytes;
    this.bytesSinceFull += bytes;
    return this.tokens >= 0;
  }

  /** True when the bucket has refilled: remembering it any longer changes nothing. */
  isFull(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.capacity;
  }

  /** Average rate since the bucket was last full (kbit/s); above the cap once over. */
  measuredKbps(now: number): number {
    const ms = Math.max(1, now - this.drainingSince);
    return Math.round((this.bytesSinceFull * 8) / ms);
  }

  /** Milliseconds over which measuredKbps was averaged. */
  measuredOverMs(now: number): number {
    return Math.round(now - this.drainingSince);
  }

  private refill(now: number): void {
    if (now > this.at) {
      this.tokens = Math.min(this.capacity, this.tokens + (now - this.at) * this.bytesPerMs);
      this.at = now;
    }
  }
}
