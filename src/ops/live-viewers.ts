/** A viewer counts while its player fetches the live playlist: players reload it every segment (2 s here), so 30 s of silence means gone. */
export const VIEWER_WINDOW_MS = 30_000;
/** Clients tracked at most; past it new ones are not counted until old ones age out (a flood of fake clients cannot grow memory). */
const MAX_CLIENTS = 100_000;

/**
 * Live viewers as seen by this process: distinct clients (address + user
 * agent) that fetched a stream's live playlist in the last 30 s. An estimate:
 * viewers behind one NAT with the same browser count once; several processes
 * each count what they served (sum them in Prometheus).
 */
export function createLiveViewers(now: () => number = Date.now) {
  const streams = new Map<string, Map<string, number>>();
  let clients = 0;
  let prunedAt = 0;

  function prune(t: number): void {
    prunedAt = t;
    clients = 0;
    for (const [stream, seen] of streams) {
      for (const [client, at] of seen) if (t - at > VIEWER_WINDOW_MS) seen.delete(client);
      if (seen.size === 0) streams.delete(stream);
      else clients += seen.size;
    }
  }

  return {
    /** A playlist of `stream` (its live token) was served to `client`. */
    seen(stream: string, client: string): void {
      const t = now();
      if (t - prunedAt > VIEWER_WINDOW_MS) prune(t);
      let seen = streams.get(stream);
      if (!seen) {
        if (clients >= MAX_CLIENTS) return;
        seen = new Map();
        streams.set(stream, seen);
      }
      if (!seen.has(client)) {
        if (clients >= MAX_CLIENTS) return;
        clients++;
      }
      seen.set(client, t);
    },
    /** Viewers now, and how many streams have at least one. */
    count(): { viewers: number; streams: number } {
      prune(now());
      return { viewers: clients, streams: streams.size };
    },
  };
}

export type LiveViewers = ReturnType<typeof createLiveViewers>;
