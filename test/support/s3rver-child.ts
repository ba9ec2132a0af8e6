/**
 * Runs s3rver (an S3-compatible server for tests) on a free port with one
 * bucket; prints `{"port": N}` once listening. argv: directory bucket [port]
 * (a port to listen on again after an outage, test/support/s3rver.ts).
 */
import crypto from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

// s3rver encrypts list continuation tokens with the cipher "des", a name Bun's
// BoringSSL does not know (it knows "des-cbc", the same cipher): without this
// alias every truncated listing (more keys than max-keys) answers InternalError.
const alias = (alg: string) => (alg === "des" ? "des-cbc" : alg);
const { createCipheriv, createDecipheriv } = crypto;
(crypto as { createCipheriv: unknown }).createCipheriv = (alg: string, ...rest: unknown[]) => (createCipheriv as (...a: unknown[]) => unknown)(alias(alg), ...rest);
(crypto as { createDecipheriv: unknown }).createDecipheriv = (alg: string, ...rest: unknown[]) => (createDecipheriv as (...a: unknown[]) => unknown)(alias(alg), ...rest);

// s3rver lists a bucket by walking its folders in readdir order (hash order on
// ext4) and pages with "start after the last key": unsorted, a truncated
// listing skips keys. S3 lists in key order; sorted names make s3rver do too.
const { readdirSync } = fs;
(fs as { readdirSync: unknown }).readdirSync = (...args: unknown[]) => {
  const names = (readdirSync as (...a: unknown[]) => unknown[])(...args);
  return names.every((n) => typeof n === "string") ? (names as string[]).sort() : names;
};

// Imported after the patches are in place. s3rver ships no types; only its constructor, run() and close() are used.
// @ts-expect-error no declaration file
const { default: S3rver } = await import("s3rver");

// s3rver answers a PUT before the object's file is written (it never waits for
// its write stream) and rewrites the file in place: a GET right after a PUT of
// the same key (a live playlist, rewritten at every segment) read the old or a
// partial object in 20 of 50 tries. S3 is read-after-write consistent and a
// PUT atomic: the object goes to a temp file, awaited, then renamed over.
// @ts-expect-error no declaration file
const { default: FilesystemStore } = await import("s3rver/lib/stores/filesystem.js");
type S3rverObject = { bucket: string; key: string; content: Buffer | NodeJS.ReadableStream; metadata: Record<string, string> };
let tmpCounter = 0;
FilesystemStore.prototype.putObject = async function (this: any, object: S3rverObject) {
  const objectPath: string = this.getResourcePath(object.bucket, object.key, "object");
  await fs.promises.mkdir(objectPath.slice(0, objectPath.lastIndexOf("/")), { recursive: true });
  const tmp = `${objectPath}.${process.pid}.${++tmpCounter}.tmp`;
  const md5 = crypto.createHash("md5");
  let size = 0;
  const count = new Transform({
    transform(chunk, _encoding, callback) {
      md5.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  const source = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : (object.content as NodeJS.ReadableStream);
  const out = fs.createWriteStream(tmp);
  try {
    await pipeline(source, count, out);
    if (!out.closed) await once(out, "close");
    await fs.promises.rename(tmp, objectPath);
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  const digest = md5.digest("hex");
  await this.putMetadata(object.bucket, object.key, object.metadata, digest);
  return { size, md5: digest };
};

const [directory, bucket, port] = process.argv.slice(2);
const server = new S3rver({ port: Number(port ?? 0), address: "127.0.0.1", silent: true, directory, configureBuckets: [{ name: bucket ?? "vidlive", configs: [] }] });
const addr = (await server.run()) as { port: number };
console.log(JSON.stringify({ port: addr.port }));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
