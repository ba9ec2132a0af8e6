/**
 * Where durable files live, by key. A key is the file's path relative to
 * DATA_DIR in the local layout (`media/<token>/720p/index.m3u8`,
 * `originals/<video>/source.mp4`, `uploads/<upl>`, `recordings/<stream>.flv`,
 * `live/<token>/index.m3u8`), so `STORAGE=local` keeps today's folders and
 * `STORAGE=s3` mirrors them as object keys in one bucket.
 *
 * Code that produces files writes them on local disk first (the transcoder and
 * the live packager work on files) and then hands them over with `putFile` /
 * `putDir`; in the local store that is a rename into place (or nothing, when
 * the file already is at its key's path).
 */
export interface ObjectStore {
  readonly kind: "local" | "s3";
  /** The file a key names on this machine's disk when the store is local; null for a remote store. */
  localPath(key: string): string | null;
  /** Stores a local file under `key` (the local file is moved when `move`, else copied/uploaded and left). */
  putFile(key: string, path: string, opts?: { type?: string; move?: boolean }): Promise<void>;
  putBytes(key: string, data: Uint8Array | string, opts?: { type?: string }): Promise<void>;
  /** Stores every file under `dir` at `prefix/<relative path>`; returns the count and bytes. */
  putDir(prefix: string, dir: string, opts?: { move?: boolean }): Promise<{ files: number; bytes: number }>;
  /** Size of a stored object, or null when there is none. */
  stat(key: string): Promise<{ size: number; lastModified: number } | null>;
  /** The object's bytes (`end` exclusive), as a Blob-like body for a Response. */
  body(key: string, range?: { start: number; end: number }): Blob | ReadableStream<Uint8Array>;
  /** Copies the object to a local file; false when it does not exist. */
  download(key: string, path: string): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** Deletes every object under `prefix/`; returns how many. */
  deletePrefix(prefix: string): Promise<number>;
  /** Objects under `prefix/` (recursive), in key order. */
  list(prefix: string): AsyncIterable<{ key: string; size: number; lastModified: number }>;
  /** A presigned PUT URL for `key` (S3), or null when uploads go through the service (local). */
  presignPut(key: string, opts: { expiresInSeconds: number; type?: string }): string | null;
}
