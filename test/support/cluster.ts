import { S3Client } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { filesUnder } from "./files.ts";
import { type S3Server, startS3rver } from "./s3rver.ts";
import { type Child, spawnService } from "./service-process.ts";
import { type Sqld, startSqld } from "./sqld.ts";

/**
 * The scale-out setup on real engines: one sqld, one s3rver bucket, and
 * service processes (children) that share only those and SECRET_KEY, each
 * with its own DATA_DIR (STORAGE=s3, native ffmpeg). The first process
 * creates the organization; the others reuse its id and key.
 */
export interface Cluster {
  sqld: Sqld;
  s3: S3Server;
  /** The bucket, read directly (what is stored where). */
  bucket: S3Client;
  children: Child[];
  /** Starts one more process; `env` adds to (or overrides) the cluster's environment. */
  spawn(env?: Record<string, string>): Promise<Child>;
  /** Keys stored under `prefix`. */
  keysUnder(prefix: string): Promise<string[]>;
  /** A process's own DATA_DIR. */
  dataDirOf(child: Child): string;
  /** Files under the named top folders (e.g. "media", "live") of every process's DATA_DIR. */
  localFiles(tops: string[]): string[];
  /** Stops every process still running, the engines, and removes the DATA_DIRs. */
  stop(): Promise<void>;
}

export async function startCluster(opts: { env?: Record<string, string>; name?: string; logLevel?: "debug" | "info" } = {}): Promise<Cluster> {
  const [sqld, s3] = await Promise.all([startSqld(), startS3rver()]);
  const bucket = new S3Client({ endpoint: s3.endpoint, bucket: s3.bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });
  const dirs: string[] = [];
  const children: Child[] = [];
  const dirOf = new Map<Child, string>();
  const secretKey = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");
  return {
    sqld,
    s3,
    bucket,
    children,
    async spawn(env = {}) {
      const dataDir = mkdtempSync(join(tmpdir(), `${opts.name ?? "cluster"}-`));
      dirs.push(dataDir);
      const first = children[0];
      const child = await spawnService(
        {
          DATA_DIR: dataDir,
          PORT: "0",
          RTMP_PORT: "0",
          SECRET_KEY: secretKey,
          DATABASE_URL: sqld.url,
          MEDIA_BACKEND: "native",
          // Always logging (kept in `Child.recentLogs`, for a failing test to print); LOG_LEVEL overrides the suite's level.
          LOG_LEVEL: process.env.LOG_LEVEL ?? opts.logLevel ?? "info",
          ...s3.env,
          ...opts.env,
          ...env,
        },
        first ? { orgId: first.orgId, apiKey: first.apiKey } : undefined,
      );
      children.push(child);
      dirOf.set(child, dataDir);
      return child;
    },
    async keysUnder(prefix) {
      const keys: string[] = [];
      let continuationToken: string | undefined;
      do {
        const page = await bucket.list({ prefix, continuationToken });
        keys.push(...(page.contents ?? []).map((o) => o.key));
        continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
      } while (continuationToken);
      return keys;
    },
    dataDirOf: (child) => dirOf.get(child)!,
    localFiles: (tops) => dirs.flatMap((dir) => tops.flatMap((top) => filesUnder(join(dir, top)))),
    async stop() {
      await Promise.all(children.filter((c) => c.proc.exitCode === null && c.proc.signalCode === null).map((c) => c.stop()));
      await Promise.all([sqld.stop(), s3.stop()]);
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
