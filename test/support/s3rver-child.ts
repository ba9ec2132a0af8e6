/**
 * Runs s3rver (an S3-compatible server for tests) on a free port with one
 * bucket; prints `{"port": N}` once listening. argv: directory bucket.
 */
// @ts-expect-error s3rver ships no types; only its constructor, run() and close() are used.
import S3rver from "s3rver";

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory, configureBuckets: [{ name: bucket ?? "vidlive", configs: [] }] });
const addr = (await server.run()) as { port: number };
console.log(JSON.stringify({ port: addr.port }));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
