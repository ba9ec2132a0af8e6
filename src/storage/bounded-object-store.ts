import { boundedBy } from "../dependency-errors.ts";
import type { ObjectStore } from "./object-store.ts";

/**
 * The store with every call that moves no bulk data bounded by `ms`: `stat`,
 * `putBytes`, `delete`, `deletePrefix`, each page of `list`. Past it the call
 * fails with DependencyUnavailable("storage"): a request answers 503 with
 * Retry-After, work retries. Transfers of files (`putFile`, `putDir`,
 * `download`) last as long as their bytes do and are not bounded here; the
 * request deadline bounds a request that waits on one (src/http/request-deadline.ts).
 */
export function boundedObjectStore(store: ObjectStore, ms: number): ObjectStore {
  const bound = <T>(p: Promise<T>, what: string) => boundedBy(p, ms, "storage", what);
  return {
    kind: store.kind,
    localPath: (key) => store.localPath(key),
    putFile: (key, path, opts) => store.putFile(key, path, opts),
    putBytes: (key, data, opts) => bound(store.putBytes(key, data, opts), "put"),
    putDir: (prefix, dir, opts) => store.putDir(prefix, dir, opts),
    stat: (key) => bound(store.stat(key), "stat"),
    body: (key, range) => store.body(key, range),
    download: (key, path) => store.download(key, path),
    delete: (key) => bound(store.delete(key), "delete"),
    deletePrefix: (prefix) => bound(store.deletePrefix(prefix), "delete"),
    async *list(prefix) {
      const it = store.list(prefix)[Symbol.asyncIterator]();
      for (;;) {
        const next = await bound(it.next(), "list");
        if (next.done) return;
        yield next.value;
      }
    },
    presignPut: (key, opts) => store.presignPut(key, opts),
  };
}
