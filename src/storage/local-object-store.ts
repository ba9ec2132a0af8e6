import { copyFile, mkdir, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join, normalize, relative, resolve, sep } from "node:path";
import type { ObjectStore } from "./object-store.ts";

/**
 * The object store of `STORAGE=local`: a key is its path under DATA_DIR, so
 * the folders stay exactly as before the store existed. `putFile` with
 * `move` is a rename (nothing at all when the file already sits at the key's
 * path), so the local mode pays no copy for going through the contract.
 */
export function createLocalObjectStore(dataDir: string): ObjectStore {
  const root = resolve(dataDir);

  /** The path of a key; a key that would leave DATA_DIR (`..`, absolute) is refused. */
  const pathOf = (key: string): string => {
    const full = normalize(join(root, key));
    if (!full.startsWith(root + sep)) throw new Error(`Object key outside the store: ${key}`);
    return full;
  };

  async function put(key: string, path: string, move: boolean): Promise<number> {
    const dest = pathOf(key);
    const src = resolve(path);
    const size = (await stat(src)).size;
    if (src === dest) return size;
    await mkdir(dirname(dest), { recursive: true });
    if (move) {
      // A rename across devices fails (EXDEV): copy, then remove the source.
      await rename(src, dest).catch(async () => {
        await copyFile(src, dest);
        await rm(src, { force: true });
      });
    } else {
      await copyFile(src, dest);
    }
    return size;
  }

  /**
   * Files under `dir`, in key order: entries are sorted by name with a
   * folder's name ending in "/", so the order equals S3's string order of the
   * full keys (`a-c` before `a/b`), and nothing is held in memory but one
   * folder's entries.
   */
  async function* walk(dir: string): AsyncGenerator<{ path: string; size: number; lastModified: number }> {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const named = entries.map((e) => ({ e, name: e.isDirectory() ? `${e.name}/` : e.name }));
    named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const { e } of named) {
      const full = join(dir, e.name);
      if (e.isDirectory()) yield* walk(full);
      else if (e.isFile()) {
        const s = await stat(full).catch(() => null);
        if (s) yield { path: full, size: s.size, lastModified: s.mtimeMs };
      }
    }
  }

  /** The folder of a prefix ("" = the whole store). */
  const dirOf = (prefix: string) => (prefix === "" ? root : pathOf(prefix));
  const keyOf = (path: string) => relative(root, path).split(sep).join("/");

  return {
    kind: "local",
    localPath: pathOf,

    async putFile(key, path, opts = {}) {
      await put(key, path, opts.move ?? false);
    },

    async putBytes(key, data) {
      const dest = pathOf(key);
      await mkdir(dirname(dest), { recursive: true });
      await Bun.write(dest, data);
    },

    async putDir(prefix, dir, opts = {}) {
      let files = 0;
      let bytes = 0;
      const src = resolve(dir);
      for await (const f of walk(src)) {
        bytes += await put(`${prefix}/${relative(src, f.path).split(sep).join("/")}`, f.path, opts.move ?? false);
        files++;
      }
      if (opts.move && src !== pathOf(prefix)) await rm(src, { recursive: true, force: true });
      return { files, bytes };
    },

    async stat(key) {
      const s = await stat(pathOf(key)).catch(() => null);
      return s?.isFile() ? { size: s.size, lastModified: s.mtimeMs } : null;
    },

    body(key, range) {
      const file = Bun.file(pathOf(key));
      return range ? file.slice(range.start, range.end) : file;
    },

    async download(key, path) {
      const src = pathOf(key);
      if (
        !(await stat(src).then(
          (s) => s.isFile(),
          () => false,
        ))
      )
        return false;
      if (resolve(path) === src) return true;
      await mkdir(dirname(path), { recursive: true });
      await copyFile(src, path);
      return true;
    },

    async delete(key) {
      await unlink(pathOf(key)).catch(() => undefined);
    },

    async deletePrefix(prefix) {
      const base = pathOf(prefix); // never "": that would be all of DATA_DIR
      let n = 0;
      for await (const _ of walk(base)) n++;
      await rm(base, { recursive: true, force: true });
      return n;
    },

    async *list(prefix) {
      for await (const f of walk(dirOf(prefix))) yield { key: keyOf(f.path), size: f.size, lastModified: f.lastModified };
    },

    presignPut: () => null,
  };
}
