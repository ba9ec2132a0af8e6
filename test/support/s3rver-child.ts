/**
 * Runs s3rver (an S3-compatible server for tests) on a free port with one
 * bucket; prints `{"port": N}` once listening. argv: directory bucket.
 */
import crypto from "node:crypto";
import fs from "node:fs";

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

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory, configureBuckets: [{ name: bucket ?? "vidlive", configs: [] }] });
const addr = (await server.run()) as { port: number };
console.log(JSON.stringify({ port: addr.port }));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
