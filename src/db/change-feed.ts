import type { Client } from "@libsql/client";

/**
 * When a process on a libSQL server may trust its read cache (read-cache.ts).
 *
 * On a `file:` database a commit by any connection is seen in the WAL-index
 * header at no cost, so the cache is exact. A server has no such header: this
 * polls `change_version`, a counter that triggers on the cached tables bump on
 * every insert, update and delete by any writer (migration 0017), every
 * `intervalMs`; the API key lookup of every request and every write transaction
 * of this process read it too (`observe`), so a request's cached reads are the
 * database's answer as of its start and this process's own writes are read at
 * once. `version()` changes when the counter moved, and is null (cache off, every
 * read goes to the server) when no poll that *started* within `freshMs`
 * succeeded. So a commit on another process is seen here within `freshMs` at
 * most: one that landed before a poll started is in that poll's answer, and
 * without such a poll the cache is off. With the defaults (250 ms, 750 ms) a
 * revoked key or changed setting is refused everywhere within 1 s.
 */
export interface ChangeFeed {
  version(): number | null;
  /**
   * A read that started at `startedAt` (performance.now()) saw the counter at `v`: the same as a poll's answer,
   * taken from a read the hot path makes anyway (the API key lookup of every request reads it in its one round trip).
   */
  observe(v: number, startedAt: number): void;
  close(): void;
}

export const CHANGE_VERSION_SQL = "SELECT v FROM change_version WHERE id = 1";

export function createChangeFeed(client: Client, opts: { intervalMs?: number; freshMs?: number } = {}): ChangeFeed {
  const intervalMs = opts.intervalMs ?? 250;
  const freshMs = opts.freshMs ?? 750;
  let generation = 0;
  let counter: number | null = null;
  // performance.now() at the start of the last poll that answered; -Infinity before the first.
  let freshSince = Number.NEGATIVE_INFINITY;
  let polling = false;
  let closed = false;

  function observe(v: number, startedAt: number): void {
    if (!Number.isFinite(v)) return;
    // The counter only grows (triggers add one): an answer older than one already seen changes nothing.
    if (counter === null || v > counter) {
      counter = v;
      generation++;
    }
    freshSince = Math.max(freshSince, startedAt);
  }

  async function poll(): Promise<void> {
    if (polling || closed) return;
    polling = true;
    const started = performance.now();
    try {
      const res = await client.execute(CHANGE_VERSION_SQL);
      observe(Number(res.rows[0]?.[0] ?? Number.NaN), started);
    } catch {
      // The server does not answer: the cache goes off once freshMs has passed (version() null).
    } finally {
      polling = false;
    }
  }

  const timer = setInterval(poll, intervalMs);
  timer.unref?.();
  void poll();

  return {
    version() {
      if (performance.now() - freshSince > freshMs) return null;
      return generation;
    },
    observe,
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
