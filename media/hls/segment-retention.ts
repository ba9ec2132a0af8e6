import { unlink } from "node:fs/promises";
import { join } from "node:path";

export interface SegmentRetention {
  /** A segment left the playlist; it is deleted once `graceSegments` more have left after it. */
  popped(uri: string): void;
  /** Segments left the playlist but not yet deleted. */
  readonly pending: readonly string[];
}

/**
 * HLS (RFC 8216 6.2.2) asks a server to keep a segment available for its own
 * duration plus the playlist's after removing it from the playlist: a player that
 * fetched the previous playlist may still request it. Counting pops approximates
 * that without timers.
 */
export function createSegmentRetention(options: {
  dir: string;
  graceSegments: number;
  onError?: (uri: string, err: unknown) => void;
  /** Deletes a segment somewhere else than `dir` (an object store); a missing one is not an error. */
  remove?: (uri: string) => Promise<void>;
}): SegmentRetention {
  const pending: string[] = [];
  return {
    get pending() {
      return pending;
    },
    popped(uri) {
      pending.push(uri);
      while (pending.length > options.graceSegments) {
        const victim = pending.shift()!;
        (options.remove ? options.remove(victim) : unlink(join(options.dir, victim))).catch((err) => {
          if ((err as NodeJS.ErrnoException).code !== "ENOENT") options.onError?.(victim, err);
        });
      }
    },
  };
}
