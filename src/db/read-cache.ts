import type { HotReader } from "./hot-reader.ts";

/**
 * Results of reads on the hot path (API key lookup, actor and endpoint reads), kept while
 * the database is unchanged: every use first reads `hot.version()` (the WAL-index header
 * of the `-shm` file, else `PRAGMA data_version`: create-database.ts), which changes as
 * soon as any connection of any process commits. So an answer from here is what the read
 * would answer now: a revoked key, a new transition, a deleted endpoint are seen by the
 * very next request. Any commit empties it. On a libSQL server `version()` follows the
 * polled change feed (change-feed.ts): another process's commit is seen within 750 ms,
 * this process's own at once, and nothing is cached while the server does not answer
 * (`version()` null). Keys name the organization of what they hold (a key's prefix names its own).
 */
export interface ReadCache {
  read<T>(key: string, load: () => Promise<T>): Promise<T>;
}

export function createReadCache(hot: HotReader, max = 4096): ReadCache {
  let seen: number | null = null;
  const entries = new Map<string, unknown>();
  return {
    async read<T>(key: string, load: () => Promise<T>): Promise<T> {
      const v = hot.version();
      if (v === null) return load();
      if (v !== seen) {
        entries.clear();
        seen = v;
      }
      if (entries.has(key)) return entries.get(key) as T;
      // Loaded after the version was read: if a commit lands in between, the next use sees another version and drops it.
      const value = await load();
      if (seen === v) {
        if (entries.size >= max) entries.clear();
        entries.set(key, value);
      }
      return value;
    },
  };
}
