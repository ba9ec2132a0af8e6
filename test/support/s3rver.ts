import type { Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** The STORAGE=s3 environment for a service using this bucket. */
  env: Record<string, string>;
  dir: string;
  /** An outage: the server is killed (its objects kept); connections to it are refused until `resume`. */
  pause(): Promise<void>;
  /** Listens again on the same port with the same objects. */
  resume(): Promise<void>;
  /** The server's process id (SIGSTOP/SIGCONT: an object store that hangs). */
  pid: number;
  stop(): Promise<void>;
}

/** Spawns s3rver-child.ts and answers once it listens (on `port`, or a free one). */
async function spawnS3rver(dir: string, bucket: string, port?: number): Promise<{ proc: Subprocess<"ignore", "pipe", "pipe">; port: number }> {
  const args = [process.execPath, join(import.meta.dir, "s3rver-child.ts"), dir, bucket, ...(port ? [String(port)] : [])];
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let text = "";
  const deadline = Date.now() + 60_000; // a loaded 2-core machine
  while (!text.includes("\n")) {
    const chunk = await Promise.race([reader.read(), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => null)]);
    if (!chunk || chunk.done) {
      proc.kill("SIGKILL");
      throw new Error(`s3rver did not start: ${await new Response(proc.stderr).text()}`);
    }
    text += new TextDecoder().decode(chunk.value);
  }
  reader.releaseLock();
  return { proc, port: (JSON.parse(text.split("\n")[0]!) as { port: number }).port };
}

async function end(proc: Subprocess, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
  proc.kill(signal);
  await Promise.race([proc.exited, Bun.sleep(3000)]);
  if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  await proc.exited;
}

/** Starts s3rver (npm) in a child process with a fresh bucket; its default credentials are S3RVER/S3RVER. */
export async function startS3rver(bucket = "vidlive"): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), "vidlive-s3-"));
  let { proc, port } = await spawnS3rver(dir, bucket);
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    dir,
    pid: proc.pid,
    env: { STORAGE: "s3", S3_ENDPOINT: endpoint, S3_BUCKET: bucket, S3_ACCESS_KEY_ID: "S3RVER", S3_SECRET_ACCESS_KEY: "S3RVER", S3_REGION: "us-east-1" },
    async pause() {
      await end(proc, "SIGKILL");
    },
    async resume() {
      // The port was ours a moment ago; another process may grab it in between, so try a few times.
      for (let attempt = 1; ; attempt++) {
        try {
          ({ proc, port } = await spawnS3rver(dir, bucket, port));
          return;
        } catch (err) {
          if (attempt >= 5) throw err;
          await Bun.sleep(200);
        }
      }
    },
    async stop() {
      await end(proc, "SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
