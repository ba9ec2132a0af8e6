import { S3Client } from "bun";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type { ObjectStore } from "./object-store.ts";

export interface S3StoreConfig {
  endpoint?: string;
  bucket: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  region?: string;
}

/** Objects uploaded at once by `putDir`, deleted at once by `deletePrefix`. */
const PARALLEL = 8;

/** A missing object: Bun's S3 errors carry `code: "NoSuchKey"` (or a 404 for HEAD, which has no body). */
function isMissing(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string } | null;
  return !!e && (e.code === "NoSuchKey" || e.code === "ERR_S3_FILE_NOT_FOUND" || e.code === "NotFound" || /\b404\b|not\s*found/i.test(e.message ?? ""));
}

/** S3 documents InternalError / SlowDown as "try again"; s3rver answers InternalError to parallel deletes in one folder. */
async function retried<T>(fn: () => Promise<T>, tries = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= tries || (code !== "InternalError" && code !== "SlowDown" && code !== "ServiceUnavailable")) throw err;
      await Bun.sleep(20 * 2 ** i);
    }
  }
}

/** Runs `fn` on every item, at most `n` at a time. */
async function inParallel<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}

/**
 * The same bytes through a plain JS stream. Bun.serve drops a Response's own
 * `Content-Length` and answers chunked when the body is an S3 stream (measured,
 * Bun 1.4.5), and players need the length on a 206; a relayed stream keeps it.
 */
function relayed(source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

async function* walk(dir: string): AsyncGenerator<string> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const full = join(dir, e.name);
    if (e.isDirectory()) yield* walk(full);
    else if (e.isFile()) yield full;
  }
}

/**
 * The object store of `STORAGE=s3`: one bucket, keys as in the local layout.
 * Bun's `S3Client` signs every request; `write` of a `Bun.file` streams it
 * and switches to a multipart upload by itself for large files, so no file
 * is ever read whole into memory. Reads for serving are streamed slices
 * (`slice().stream()`), never a `Response(s3file)`, which Bun answers with a
 * redirect to a presigned URL.
 */
export function createS3ObjectStore(cfg: S3StoreConfig, opts: { pageSize?: number } = {}): ObjectStore {
  const pageSize = opts.pageSize ?? 1000;
  const client = new S3Client({
    bucket: cfg.bucket,
    endpoint: cfg.endpoint,
    accessKeyId: cfg.accessKeyId,
    secretAccessKey: cfg.secretAccessKey,
    region: cfg.region,
  });

  const checkKey = (key: string) => {
    if (!key || key.startsWith("/") || key.split("/").some((p) => p === ".." || p === "." || p === "")) throw new Error(`Invalid object key: ${key}`);
    return key;
  };

  async function upload(key: string, path: string, type?: string): Promise<number> {
    const file = Bun.file(path);
    const size = file.size;
    await client.write(checkKey(key), file, type ? { type } : undefined);
    return size;
  }

  async function* listAll(prefix: string) {
    let continuationToken: string | undefined;
    for (;;) {
      const page = await client.list({ prefix: prefix === "" ? undefined : `${prefix}/`, continuationToken, maxKeys: pageSize });
      for (const o of page.contents ?? []) {
        yield { key: o.key, size: o.size ?? 0, lastModified: o.lastModified ? Date.parse(o.lastModified) : 0 };
      }
      if (!page.isTruncated || !page.nextContinuationToken) return;
      continuationToken = page.nextContinuationToken;
    }
  }

  return {
    kind: "s3",
    localPath: () => null,

    async putFile(key, path, opts = {}) {
      await upload(key, path, opts.type);
      if (opts.move) await rm(path, { force: true });
    },

    async putBytes(key, data, opts = {}) {
      await client.write(checkKey(key), data, opts.type ? { type: opts.type } : undefined);
    },

    async putDir(prefix, dir, opts = {}) {
      const paths: string[] = [];
      for await (const p of walk(dir)) paths.push(p);
      let bytes = 0;
      await inParallel(paths, PARALLEL, async (p) => {
        const size = await upload(`${prefix}/${relative(dir, p).split(sep).join("/")}`, p);
        bytes += size;
      });
      if (opts.move) await rm(dir, { recursive: true, force: true });
      return { files: paths.length, bytes };
    },

    async stat(key) {
      try {
        const s = await client.stat(checkKey(key));
        return { size: s.size, lastModified: s.lastModified.getTime() };
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    },

    body(key, range) {
      const file = client.file(checkKey(key));
      return relayed((range ? file.slice(range.start, range.end) : file).stream());
    },

    async download(key, path) {
      const file = client.file(checkKey(key));
      await mkdir(dirname(path), { recursive: true });
      try {
        await Bun.write(path, file);
      } catch (err) {
        await rm(path, { force: true });
        if (isMissing(err)) return false;
        throw err;
      }
      return (await stat(path).catch(() => null)) !== null;
    },

    async delete(key) {
      // S3's DELETE answers 204 for a missing key too.
      await retried(() => client.delete(checkKey(key)));
    },

    async deletePrefix(prefix) {
      checkKey(prefix);
      let n = 0;
      // A page at a time, each deleted in parallel lanes, then listed again from
      // the start: a continuation token across deletes is not portable (s3rver
      // answers InternalError), and memory stays at one page.
      let previous = new Set<string>();
      for (;;) {
        const page = await client.list({ prefix: `${prefix}/`, maxKeys: pageSize });
        const batch = (page.contents ?? []).map((o) => o.key);
        if (batch.length === 0) return n;
        if (batch.some((key) => previous.has(key))) throw new Error(`Objects under ${prefix}/ survived their delete`);
        await inParallel(batch, PARALLEL, (key) => retried(() => client.delete(key)));
        n += batch.length;
        previous = new Set(batch);
      }
    },

    list: (prefix) => listAll(prefix),

    presignPut(key, opts) {
      return client.presign(checkKey(key), { method: "PUT", expiresIn: opts.expiresInSeconds, ...(opts.type ? { type: opts.type } : {}) });
    },
  };
}
