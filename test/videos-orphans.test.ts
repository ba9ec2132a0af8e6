import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { hasNativeFfmpeg, reapOrphans } from "../media/transcoder/index.ts";
import { waitFor } from "./support/events.ts";
import { FIXTURES } from "./support/file-server.ts";
import { ok } from "./support/api.ts";

setDefaultTimeout(120_000);

/** No ffmpeg/ffprobe child outlives a killed service process. */

const dirs: string[] = [];
const strays = new Set<number>();
afterAll(() => {
  // Whatever a failing run left behind, by pid (only processes these tests made).
  for (const pid of strays) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** Live ffmpeg/ffprobe processes (or setpriv about to become one) whose command line mentions `needle`, read from /proc. */
function mediaProcessesMentioning(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    if (!["ffmpeg", "ffprobe", "setpriv"].includes(basename(argv[0] ?? ""))) continue;
    if (argv.some((a) => a.includes(needle))) found.push(Number(entry));
  }
  for (const pid of found) strays.add(pid);
  return found;
}

async function readLines(stream: ReadableStream<Uint8Array>, onText: (all: string) => void) {
  let out = "";
  for await (const chunk of stream) {
    out += new TextDecoder().decode(chunk);
    onText(out);
  }
}

describe.skipIf(!hasNativeFfmpeg())("orphaned media processes", () => {
  test("kill -9 of the service mid-transcode (native backend) leaves no ffmpeg writing into its DATA_DIR", async () => {
    const work = tempDir("orphans-");
    const dataDir = join(work, "data");
    // A 60 s source: its transcode runs long after the kill unless the children die with the service.
    const long = join(work, "long.mp4");
    const made = Bun.spawnSync(["ffmpeg", "-v", "error", "-stream_loop", "19", "-i", join(FIXTURES, "av-720p-3s.mp4"), "-c", "copy", long]);
    expect(made.exitCode).toBe(0);

    const env = { ...process.env, DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", ALLOW_PRIVATE_NETWORK: "1", MEDIA_BACKEND: "native", TRANSCODE_WORKERS: "1", JOB_LEASE_MS: "1500" };
    // The key banner is on stderr, the JSON logs on stdout: read both.
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "..", "src", "main.ts")], { env, stdout: "pipe", stderr: "pipe" });
    const text = { stdout: "", stderr: "" };
    let out = "";
    const reader = Promise.all(
      (["stdout", "stderr"] as const).map((name) =>
        readLines(child[name], (all) => {
          text[name] = all;
          out = text.stdout + text.stderr;
        }),
      ),
    ).catch(() => undefined);
    try {
      const ready = await waitFor(
        async () => {
          const key = /API key \(shown once\): (sk_live_\S+)/.exec(out)?.[1];
          const port = /"msg":"HTTP API listening","port":(\d+)/.exec(out)?.[1];
          return key && port ? { key, base: `http://127.0.0.1:${port}/api/public/v1` } : undefined;
        },
        { timeoutMs: 60_000, what: "child service" },
      );
      const headers = { authorization: `Bearer ${ready.key}`, "content-type": "application/json" };
      const up = (await ok(fetch(`${ready.base}/videos/upload-url/`, { method: "POST", headers, body: "{}" }), "createUploadUrl")).data;
      expect((await fetch(up.upload_url, { method: "PUT", body: Bun.file(long) })).status).toBe(200);
      const created = await fetch(`${ready.base}/videos/`, { method: "POST", headers, body: JSON.stringify({ source_url: up.source_url }) });
      expect(created.status).toBe(201);

      // Mid-transcode: ffmpeg is writing renditions into DATA_DIR.
      await waitFor(async () => mediaProcessesMentioning(dataDir).length >= 1 && readdirSync(join(dataDir, "media")).length > 0, { timeoutMs: 60_000, intervalMs: 50, what: "ffmpeg running" });
      await Bun.sleep(300);
      expect(mediaProcessesMentioning(dataDir).length).toBeGreaterThanOrEqual(1);
      child.kill(9);
      await child.exited;

      // Bounded: the children go with their parent; without that they would run for many seconds more.
      const left = await waitFor(async () => (mediaProcessesMentioning(dataDir).length === 0 ? "none" : undefined), { timeoutMs: 3_000, intervalMs: 50, what: "no ffmpeg left" }).catch(() =>
        mediaProcessesMentioning(dataDir),
      );
      expect(left).toBe("none");
    } finally {
      child.kill(9);
      await reader;
    }
  }, 120_000);

  test("fallback without setpriv: the next start reaps the children recorded by a killed process, and only those", async () => {
    const pidDir = join(tempDir("reap-"), "run");
    mkdirSync(pidDir, { recursive: true });
    const marker = `orphan-test-${process.pid}-${Date.now()}`;
    const parent = Bun.spawn([process.execPath, join(import.meta.dir, "support", "orphan-parent.ts"), pidDir, marker], { stdout: "pipe", stderr: "inherit" });
    let out = "";
    const reader = readLines(parent.stdout, (all) => (out = all)).catch(() => undefined);
    const pid = Number(await waitFor(async () => /child (\d+)/.exec(out)?.[1], { timeoutMs: 30_000, what: "ffmpeg spawned" }));
    strays.add(pid);
    expect(mediaProcessesMentioning(marker)).toEqual([pid]);

    // Processes that must survive the reap: a recorded child whose parent is alive,
    // and a live process at a recorded pid whose command line is not the recorded one (a recycled pid).
    const liveParent = Bun.spawn(["sleep", "60"]);
    const ownedByLive = Bun.spawn(["sleep", "61"]);
    const recycled = Bun.spawn(["sleep", "62"]);
    for (const p of [liveParent, ownedByLive, recycled]) strays.add(p.pid);
    writeFileSync(join(pidDir, `${ownedByLive.pid}.json`), JSON.stringify({ parent: liveParent.pid, parentStart: null, argv: ["sleep", "61"] }));
    writeFileSync(join(pidDir, `${recycled.pid}.json`), JSON.stringify({ parent: 999_999_999, parentStart: null, argv: ["ffmpeg", "-i", "x"] }));

    parent.kill(9);
    await parent.exited;
    await reader;
    await Bun.sleep(300);
    // Without a parent-death signal the child outlives its parent: the case the reap is for.
    expect(mediaProcessesMentioning(marker)).toEqual([pid]);

    expect(reapOrphans(pidDir)).toEqual([pid]);
    await waitFor(async () => (mediaProcessesMentioning(marker).length === 0 ? true : undefined), { timeoutMs: 3_000, what: "orphan reaped" });
    // The others live on; the stale records are gone, the live parent's stays.
    expect(ownedByLive.exitCode).toBeNull();
    expect(recycled.exitCode).toBeNull();
    expect(readdirSync(pidDir)).toEqual([`${ownedByLive.pid}.json`]);
    for (const p of [liveParent, ownedByLive, recycled]) p.kill(9);
  }, 60_000);
});
