import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** The STORAGE=s3 environment for a service using this bucket. */
  env: Record<string, string>;
  dir: string;
  /** The server's process id (SIGSTOP/SIGCONT: an object store that hangs). */
  pid: number;
  stop(): Promise<void>;
}

/** Starts s3rver (npm) in a child process with a fresh bucket; its default credentials are S3RVER/S3RVER. */
export async function startS3rver(bucket = "vidlive"): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), "vidlive-s3-"));
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "s3rver-child.ts"), dir, bucket], { stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let text = "";
  const deadline = Date.now() + 15_000;
  while (!text.includes("\n")) {
    const chunk = await Promise.race([reader.read(), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => null)]);
    if (!chunk || chunk.done) {
      proc.kill("SIGKILL");
      throw new Error(`s3rver did not start: ${await new Response(proc.stderr).text()}`);
    }
    text += new TextDecoder().decode(chunk.value);
  }
  reader.releaseLock();
  const { port } = JSON.parse(text.split("\n")[0]!) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    dir,
    pid: proc.pid,
    env: { STORAGE: "s3", S3_ENDPOINT: endpoint, S3_BUCKET: bucket, S3_ACCESS_KEY_ID: "S3RVER", S3_SECRET_ACCESS_KEY: "S3RVER", S3_REGION: "us-east-1" },
    async stop() {
      proc.kill("SIGTERM");
      await Promise.race([proc.exited, Bun.sleep(3000)]);
      if (proc.exitCode === null) proc.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
