/** How often a waited-on playlist is read from the store when no write of this process announces it (ms). */
export const CROSS_PROCESS_POLL_MS = 20;

/**
 * Blocking playlist reloads (LL-HLS, RFC 8216bis 6.2.5.2): a request is held
 * until the stored playlist satisfies it, or `timeoutMs`. Per playlist key,
 * one loop reads the playlist from the store while anybody waits on it:
 * at once when `notify(key)` says this process has just written it (the
 * broadcast is ingested here), else every `pollMs` (it is ingested by
 * another process: the store is all they share). Waiters of one key share
 * each read.
 */
export function createPlaylistWaiter(opts: { read: (key: string) => Promise<string | null>; pollMs: number; onError?: (err: unknown) => void }) {
  interface Waiter {
    accept: (text: string) => boolean;
    resolve: (text: string | null) => void;
  }
  interface Watch {
    waiters: Set<Waiter>;
    last: string | null;
    wake: (() => void) | null;
    /** Told of a write while reading: read again at once. */
    dirty: boolean;
  }
  const watches = new Map<string, Watch>();
  const wakeUp = (w: Watch) => {
    w.dirty = true;
    w.wake?.();
  };

  async function loop(key: string, w: Watch) {
    while (w.waiters.size > 0) {
      w.dirty = false;
      try {
        w.last = await opts.read(key);
      } catch (err) {
        opts.onError?.(err);
      }
      if (w.last !== null) {
        for (const waiter of [...w.waiters]) {
          if (!waiter.accept(w.last)) continue;
          w.waiters.delete(waiter);
          waiter.resolve(w.last);
        }
      }
      if (w.waiters.size === 0) break;
      if (w.dirty) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => done(), opts.pollMs);
        const done = () => {
          clearTimeout(timer);
          w.wake = null;
          resolve();
        };
        w.wake = done;
      });
    }
    watches.delete(key);
  }

  return {
    /** The playlist once `accept` holds for it; at the timeout the last one read (null if none). */
    wait(key: string, accept: (text: string) => boolean, timeoutMs: number): Promise<string | null> {
      let w = watches.get(key);
      const fresh = !w;
      if (!w) {
        w = { waiters: new Set(), last: null, wake: null, dirty: false };
        watches.set(key, w);
      }
      const watch = w;
      const result = new Promise<string | null>((resolve) => {
        const waiter: Waiter = {
          accept,
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
        };
        const timer = setTimeout(() => {
          watch.waiters.delete(waiter);
          resolve(watch.last);
        }, timeoutMs);
        watch.waiters.add(waiter);
      });
      if (fresh) void loop(key, watch);
      else wakeUp(watch);
      return result;
    },
    /** This process has just written the playlist at `key`: its waiters get it now rather than at the next poll. */
    notify(key: string): void {
      const w = watches.get(key);
      if (w) wakeUp(w);
    },
    /** Keys being waited on (tests, metrics). */
    waiting: () => [...watches.values()].reduce((n, w) => n + w.waiters.size, 0),
  };
}

export type PlaylistWaiter = ReturnType<typeof createPlaylistWaiter>;
